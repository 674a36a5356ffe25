// npukit's implementation of the IREE VM API that vm-c modules use.

#ifndef IREE_VM_API_H_
#define IREE_VM_API_H_

#include "iree/base/api.h"
#include "iree/vm/buffer.h"
#include "iree/vm/context.h"
#include "iree/vm/instance.h"
#include "iree/vm/invocation.h"
#include "iree/vm/list.h"
#include "iree/vm/module.h"
#include "iree/vm/native_module.h"
#include "iree/vm/ref.h"
#include "iree/vm/stack.h"
#include "iree/vm/type_def.h"
#include "iree/vm/value.h"

#endif  // IREE_VM_API_H_
