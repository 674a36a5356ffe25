// Functions that return one ref at several positions, which IREE 3.13's
// vm-c emitter writes only at the last (codegen/vm_c_ref_fix.py).
vm.module @dup {
  vm.export @aba
  vm.func @aba(%a: !vm.buffer, %b: !vm.buffer) -> (!vm.buffer, !vm.buffer, !vm.buffer) {
    vm.return %a, %b, %a : !vm.buffer, !vm.buffer, !vm.buffer
  }
  vm.export @aab
  vm.func @aab(%a: !vm.buffer, %b: !vm.buffer) -> (!vm.buffer, !vm.buffer, !vm.buffer) {
    vm.return %a, %a, %b : !vm.buffer, !vm.buffer, !vm.buffer
  }
  vm.export @abb
  vm.func @abb(%a: !vm.buffer, %b: !vm.buffer) -> (!vm.buffer, !vm.buffer, !vm.buffer) {
    vm.return %a, %b, %b : !vm.buffer, !vm.buffer, !vm.buffer
  }
  vm.export @aaa
  vm.func @aaa(%a: !vm.buffer) -> (!vm.buffer, !vm.buffer, !vm.buffer) {
    vm.return %a, %a, %a : !vm.buffer, !vm.buffer, !vm.buffer
  }
  vm.export @aia
  vm.func @aia(%a: !vm.buffer, %i: i32) -> (!vm.buffer, i32, !vm.buffer) {
    vm.return %a, %i, %a : !vm.buffer, i32, !vm.buffer
  }
  vm.export @ab
  vm.func @ab(%a: !vm.buffer, %b: !vm.buffer) -> (!vm.buffer, !vm.buffer) {
    vm.return %a, %b : !vm.buffer, !vm.buffer
  }
}
