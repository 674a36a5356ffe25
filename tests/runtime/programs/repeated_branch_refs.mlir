// A loop whose entry edge passes one ref to two block arguments, which IREE
// 3.13's vm-c emitter assigns to one of them only
// (passes/vm_branch_ref_copies.py). @lengths(n) runs n iterations of
// (x, y) <- (b, x) from (a, a), len(a) = 1, len(b) = 2, and returns
// 100 * len(a) + 10 * len(x) + len(y): 111, 121, then 122 (a stays live
// after the loop, so that x and y cannot share its register).
vm.module @branches {
  vm.export @lengths
  vm.func @lengths(%n: i32) -> i64 {
    %c0 = vm.const.i32.zero
    %c1 = vm.const.i32 1
    %align = vm.const.i32 16
    %l1 = vm.const.i64 1
    %l2 = vm.const.i64 2
    %l10 = vm.const.i64 10
    %l100 = vm.const.i64 100
    %a = vm.buffer.alloc %l1, %align : !vm.buffer
    %b = vm.buffer.alloc %l2, %align : !vm.buffer
    vm.br ^loop(%c0, %a, %a : i32, !vm.buffer, !vm.buffer)
  ^loop(%i: i32, %x: !vm.buffer, %y: !vm.buffer):
    %more = vm.cmp.lt.i32.s %i, %n : i32
    vm.cond_br %more, ^body, ^done
  ^body:
    %next = vm.add.i32 %i, %c1 : i32
    vm.br ^loop(%next, %b, %x : i32, !vm.buffer, !vm.buffer)
  ^done:
    %lx = vm.buffer.length %x : !vm.buffer -> i64
    %ly = vm.buffer.length %y : !vm.buffer -> i64
    %la = vm.buffer.length %a : !vm.buffer -> i64
    %hundreds = vm.mul.i64 %la, %l100 : i64
    %tens = vm.mul.i64 %lx, %l10 : i64
    %s = vm.add.i64 %hundreds, %tens : i64
    %r = vm.add.i64 %s, %ly : i64
    vm.return %r : i64
  }
}
