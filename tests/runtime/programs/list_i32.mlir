// A vm.list of i32 that survives optimization: create, resize, set, get, size.
func.func @main(%arg0: tensor<4xi32>) -> tensor<4xi32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %e = tensor.extract %arg0[%c0] : tensor<4xi32>
  %l = util.list.create %c2 : !util.list<i32>
  %lb = util.optimization_barrier %l : !util.list<i32>
  util.list.resize %lb, %c2 : !util.list<i32>
  util.list.set %lb[%c1], %e : !util.list<i32>
  %v = util.list.get %lb[%c1] : !util.list<i32>
  %n = util.list.size %lb : !util.list<i32>
  %ni = arith.index_cast %n : index to i32
  %s = arith.addi %v, %ni : i32
  %r = tensor.insert %s into %arg0[%c2] : tensor<4xi32>
  return %r : tensor<4xi32>
}
