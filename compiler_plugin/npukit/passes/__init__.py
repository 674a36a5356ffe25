"""npukit's passes, run on the MLIR Python bindings between IREE's phases.

Each module holds one pass; the driver (npukit.driver.phases) decides at
which phase boundary it runs.
"""
