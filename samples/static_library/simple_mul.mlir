// The program of the static-library and embedded-ELF samples: an elementwise
// product of two 4-element vectors.
func.func @simple_mul(%lhs: tensor<4xf32>, %rhs: tensor<4xf32>) -> tensor<4xf32> {
  %product = arith.mulf %lhs, %rhs : tensor<4xf32>
  return %product : tensor<4xf32>
}
