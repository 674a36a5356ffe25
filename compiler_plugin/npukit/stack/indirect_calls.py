"""Where the indirect calls of npukit's firmware can go: its function-pointer
tables, by the C type of the pointer.

A C call through a pointer reaches only functions of the pointer's type. The
machine code no longer carries types, so this module carries what npukit's
runtime (emitc_vm/, hal_driver/), the vm-c modules IREE emits and the
static libraries they call put in each kind of pointer: each kind is the
names of the functions stored in such pointers (a pattern), and each
function of the runtime that calls through pointers names the kinds it
calls. The stack analysis (stack_bound) then gives a call through a pointer
in a listed function the address-taken functions of its kinds, plus every
address-taken function that no kind claims, and a call in a function not
listed every address-taken function: a pointer this table does not know
about is followed everywhere it could go, and the recursion that may make
is reported as no bound.
"""

from __future__ import annotations

import re

from npukit.passes.short_export_names import SHORT_NAME_PATTERN

# Kinds of function pointer: the functions the program stores in them.
KINDS: dict[str, str] = {
    # iree_allocator_ctl_fn_t (emitc_vm/include/iree/base/allocator.h)
    "allocator_ctl": r"_ctl$",
    # iree_vm_module_t's begin_call (the native modules', which the vm-c modules are too)
    "module_begin_call": r"^native_begin_call$",
    # iree_vm_module_t's queries (emitc_vm/src/native_module.c)
    "module_query": r"^native_(name|signature|get_function|lookup_function)$",
    # the rest of iree_vm_module_t's interface
    "module_interface": r"^native_\w+$",
    # iree_vm_native_module_t's user interface: a vm-c module's <name>_destroy, _alloc_state ... and the HAL
    # modules' state hooks
    "native_user_interface": r"^(?!native_)\w+_(destroy|alloc_state|free_state|fork_state|resolve_import|notify|"
                             r"state_free|state_alloc)$",
    "native_user_begin_call": r"^(?!native_)\w+_begin_call$",
    # iree_vm_native_function_shim_t
    "native_shim": r"^iree_emitc_shim$",
    # iree_vm_native_function_target_t: a vm-c module's exports, the HAL modules' functions
    "native_target": r"(_export_shim$|^(buffer_view|buffer|device|devices|executable|executable_cache|"
                     r"command_buffer|fence|semaphore|allocator|channel|list|pipeline_layout)_\w+$)",
    # iree_vm_module_dependency_callback_t
    "dependency_callback": r"^(check|note)_dependency$",
    # the VM stack's state resolver
    "state_resolver": r"^resolve_state$",
    # iree_vm_ref_destroy_t (the ref types' descriptors)
    "ref_destroy": r"^(list|buffer|view|device|allocator|file|command_buffer|executable|fence)_destroy$",
    # npukit_hal_executable_vtable_t (static and embedded libraries, mynpu executables)
    "executable_vtable": r"^(library|mynpu_executable)_\w+$",
    # npukit_hal_executable_loader_vtable_t
    "loader_vtable": r"^(static|elf|mynpu)_(supports|load)$",
    # npukit_mynpu_backend_vtable_t: the simulator's, and the deploy firmware's measuring wrapper around it
    # (samples/model/main.c)
    "npu_backend_vtable": r"^(simulator|npu)_(query_capabilities|submit|wait|read_counters)$",
    "npu_simulator_vtable": r"^simulator_(query_capabilities|submit|wait|read_counters)$",
    # a static library's query function (iree_hal_executable_library_query_fn_t)
    "library_query": r"_library_query$",
    # a library's export table: IREE's dispatch functions, by IREE's names or renamed short
    # (npukit.passes.short_export_names)
    "library_export": rf"_dispatch_\d+(_\w*)?$|{SHORT_NAME_PATTERN}",
    # npukit_module_create_fn_t: a vm-c module's <name>_create, the HAL modules' creators
    "module_create": r"_create$",
    # npukit_hal_library_release_fn_t
    "library_release": r"(_release$|^release_image$)",
}

# Functions that call through pointers: the kinds they call (a pattern of the
# caller's name; GCC's clones such as .constprop.0 keep the name before the dot).
CALLERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"^iree_allocator_\w+$", ("allocator_ctl",)),
    (r"_import_shim$|^iree_vm_context_call$|^iree_vm_invoke$", ("module_begin_call",)),
    (r"^native_begin_call$", ("native_shim", "native_user_begin_call")),
    (r"^iree_emitc_shim$", ("native_target",)),
    (r"^native_\w+$", ("native_user_interface", "dependency_callback")),
    (r"^(iree_vm_function_signature|iree_vm_module_name|iree_vm_module_signature|check_dependency|find_module|"
     r"first_import_from|iree_vm_context_resolve_function)$", ("module_query",)),
    (r"^(iree_vm_context_register_modules|iree_vm_module_\w+|unregister_from|resolve_imports)$",
     ("module_interface",)),
    (r"^iree_vm_stack_query_module_state$", ("state_resolver",)),
    (r"^(drop|iree_vm_ref_\w+)$", ("ref_destroy",)),
    (r"^(executable_destroy|npukit_hal_executable_\w+)$", ("executable_vtable",)),
    (r"^library_dispatch$", ("library_export",)),
    (r"^library_destroy$", ("library_release",)),
    (r"^npukit_hal_loader_\w+$", ("loader_vtable",)),
    (r"^mynpu_\w+$", ("npu_backend_vtable",)),
    (r"^npu_(query_capabilities|submit|wait|read_counters)$", ("npu_simulator_vtable",)),
    (r"^npukit_hal_static_library_loader_initialize$", ("library_query",)),
    (r"^npukit_runtime_load_module$", ("module_create", "module_interface")),
    # The ELF loader calls the query function of the image it loaded: code that
    # is not part of the firmware. A firmware without embedded ELFs never gets
    # there; the deploy gives no bound for one with them.
    (r"^elf_load$", ()),
)
# Kinds whose functions a firmware with embedded ELFs loads at run time: a
# call through one of them in a program that has none reaches code the
# analysis cannot see.
LOADED_KINDS = frozenset({"library_export", "library_query"})

# Recursion in the runtime: releasing a reference destroys the object when
# it held the last one, which releases what the object holds: a list its
# elements, a buffer view its buffer, a HAL buffer its parent (a subspan's)
# or the vm.buffer it wraps, a vm.buffer its storage's HAL buffer. How deep
# that goes depends on what the program built; the programs IREE emits for
# npukit's execution models nest a list of buffer views over buffers that are
# subspans or wraps of other buffers. The bound holds for programs in which
# each of these functions is active at most this many times on one chain of
# calls, and says so.
RECURSION_LIMITS: dict[str, int] = {
    "list_destroy": 2,
    "view_destroy": 2,
    "buffer_destroy": 3,
    # A mynpu executable hands what the NPU does not run to its host
    # executable, which load_host_code loads with the CPU loaders (a static or
    # embedded library, never another mynpu executable): its functions are
    # active once on a chain, as is the mynpu loader.
    "mynpu_executable_lookup_function": 1,
    "mynpu_executable_dispatch": 1,
    "mynpu_executable_export_name": 1,
    "mynpu_executable_destroy": 1,
    "mynpu_load": 1,
}

# A native module's shim calls the functions of its own module's table,
# which the same C file defines (each file has its own copy of the inline
# iree_emitc_shim).
OWN_FILE_CALLERS = re.compile(r"^iree_emitc_shim$")
# A vm-c module's import calls reach other modules (a context resolves a
# module's imports against the modules registered before it): the calls
# they lead to through pointers do not reach the importing module's file.
IMPORT_CALLERS = re.compile(r"_import_shim$")

_KIND_PATTERNS = {kind: re.compile(pattern) for kind, pattern in KINDS.items()}
_CALLER_PATTERNS = [(re.compile(pattern), kinds) for pattern, kinds in CALLERS]


def base_name(name: str) -> str:
    """A function's name without GCC's clone suffixes (foo.constprop.0 -> foo)."""
    return name.split(".", 1)[0]


def kinds_of(target: str) -> set[str]:
    name = base_name(target)
    return {kind for kind, pattern in _KIND_PATTERNS.items() if pattern.search(name)}


def called_kinds(caller: str) -> tuple[str, ...] | None:
    """The kinds of pointer |caller| calls through, None when this table does not know it."""
    name = base_name(caller)
    for pattern, kinds in _CALLER_PATTERNS:
        if pattern.search(name):
            return kinds
    return None


def reachable(caller: str, address_taken: dict[int, str]) -> set[int] | None:
    """Of the address-taken functions (address -> name), those a call through
    a pointer in |caller| may reach; None when the program has no function
    of the kinds |caller| calls that an embedded ELF provides (its pointers
    lead to code loaded at run time, which the program does not contain)."""
    kinds = called_kinds(caller)
    if kinds is None:
        return set(address_taken)
    if not kinds:
        return set()
    if set(kinds) <= LOADED_KINDS and not any(kinds_of(name) & set(kinds) for name in address_taken.values()):
        return None
    return {address for address, name in address_taken.items()
            if not kinds_of(name) or kinds_of(name) & set(kinds)}
