// Calls a function of a module the runtime does not have: loading must fail
// with a message naming the import.
func.func private @custom.scale(tensor<4xf32>) -> tensor<4xf32>
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = call @custom.scale(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
