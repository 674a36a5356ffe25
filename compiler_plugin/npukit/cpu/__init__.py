"""CPU-side support for the llvm-cpu dispatches npukit compiles."""
