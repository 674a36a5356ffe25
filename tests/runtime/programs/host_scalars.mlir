// Scalar host code between dispatches: f32/f64/i64 arithmetic on extracted elements.
func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %d = arith.subf %arg1, %arg0 : tensor<4xf32>
  %e = tensor.extract %d[%c0] : tensor<4xf32>
  %f = math.sqrt %e : f32
  %g = arith.extf %f : f32 to f64
  %h = arith.mulf %g, %g : f64
  %i = arith.truncf %h : f64 to f32
  %k = tensor.extract %arg0[%c3] : tensor<4xf32>
  %ki = arith.fptosi %k : f32 to i64
  %kk = arith.muli %ki, %ki : i64
  %kf = arith.sitofp %kk : i64 to f32
  %s = arith.addf %i, %kf : f32
  %r = tensor.insert %s into %d[%c3] : tensor<4xf32>
  return %r : tensor<4xf32>
}
