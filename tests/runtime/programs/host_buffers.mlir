// Host-side reads and writes of device buffers (hal.buffer.load/store and
// queue fills/copies in the async execution model).
func.func @main(%arg0: tensor<8xi32>) -> (tensor<8xi32>, tensor<3xi32>) {
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %a = tensor.extract %arg0[%c1] : tensor<8xi32>
  %b = tensor.extract %arg0[%c6] : tensor<8xi32>
  %s = arith.muli %a, %b : i32
  %r = tensor.insert %s into %arg0[%c6] : tensor<8xi32>
  %z = arith.constant dense<[7, 0, -7]> : tensor<3xi32>
  %t = tensor.insert %a into %z[%c1] : tensor<3xi32>
  return %r, %t : tensor<8xi32>, tensor<3xi32>
}
