"""TFLite's integer quantization arithmetic: deriving fixed-point parameters
from real scales (requantization) and emitting the arithmetic as MLIR
``arith`` operations (fixed_point)."""
