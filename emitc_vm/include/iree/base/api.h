// npukit's implementation of the IREE base API subset used by vm-c modules.

#ifndef IREE_BASE_API_H_
#define IREE_BASE_API_H_

#include "iree/base/allocator.h"
#include "iree/base/config.h"
#include "iree/base/status.h"
#include "iree/base/string_view.h"

#endif  // IREE_BASE_API_H_
