// The VM's operations on state, refs and control flow, one exported function
// per theme, each with scalar arguments and results so that IREE's runtime
// and npukit's can be called alike (tests/runtime/test_vm_ops.py). Scalar
// arithmetic has its own generated program (tests/support/vm_ops.py).
vm.module @state_ops {
  vm.global.i32 private mutable @g_i32 = 7 : i32
  vm.global.i64 private mutable @g_i64 = 9 : i64
  vm.global.f32 private mutable @g_f32 = 1.5 : f32
  vm.global.f64 private mutable @g_f64 = 2.5 : f64
  vm.global.ref private mutable @g_buffer : !vm.buffer
  vm.rodata private @bytes dense<[1, 2, 3, 250, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]> : tensor<16xi8>
  vm.import private optional @absent.function(%x : i32) -> i32
  vm.global.i32 private mutable @g_initialized : i32
  vm.initializer {
    %c11 = vm.const.i32 11
    vm.global.store.i32 %c11, @g_initialized : i32
    vm.return
  }

  //===--------------------------------------------------------------------===//
  // Globals: the old value plus the new one, directly and through an address
  //===--------------------------------------------------------------------===//

  vm.export @global_i32
  vm.func @global_i32(%v: i32) -> i32 {
    %old = vm.global.load.i32 @g_i32 : i32
    vm.global.store.i32 %v, @g_i32 : i32
    %new = vm.global.load.i32 @g_i32 : i32
    %r = vm.add.i32 %old, %new : i32
    vm.return %r : i32
  }

  vm.export @initialized
  vm.func @initialized() -> i32 {
    %v = vm.global.load.i32 @g_initialized : i32
    vm.return %v : i32
  }

  vm.export @global_i64
  vm.func @global_i64(%v: i64) -> i64 {
    %old = vm.global.load.i64 @g_i64 : i64
    vm.global.store.i64 %v, @g_i64 : i64
    %new = vm.global.load.i64 @g_i64 : i64
    %r = vm.add.i64 %old, %new : i64
    vm.return %r : i64
  }

  vm.export @global_f32
  vm.func @global_f32(%v: f32) -> f32 {
    %old = vm.global.load.f32 @g_f32 : f32
    vm.global.store.f32 %v, @g_f32 : f32
    %new = vm.global.load.f32 @g_f32 : f32
    %r = vm.add.f32 %old, %new : f32
    vm.return %r : f32
  }

  vm.export @global_f64
  vm.func @global_f64(%v: f64) -> f64 {
    %old = vm.global.load.f64 @g_f64 : f64
    vm.global.store.f64 %v, @g_f64 : f64
    vm.return %old : f64
  }

  vm.export @global_indirect_i32
  vm.func @global_indirect_i32(%v: i32) -> i32 {
    %p = vm.global.address @g_i32 : !util.ptr<i32>
    %old = vm.global.load.indirect.i32 %p : !util.ptr<i32> -> i32
    vm.global.store.indirect.i32 %v, %p : i32 -> !util.ptr<i32>
    %r = vm.mul.i32 %old, %v : i32
    vm.return %r : i32
  }

  vm.export @global_indirect_i64
  vm.func @global_indirect_i64(%v: i64) -> i64 {
    %p = vm.global.address @g_i64 : !util.ptr<i64>
    %old = vm.global.load.indirect.i64 %p : !util.ptr<i64> -> i64
    vm.global.store.indirect.i64 %v, %p : i64 -> !util.ptr<i64>
    %r = vm.sub.i64 %old, %v : i64
    vm.return %r : i64
  }

  vm.export @global_indirect_f32
  vm.func @global_indirect_f32(%v: f32) -> f32 {
    %p = vm.global.address @g_f32 : !util.ptr<f32>
    %old = vm.global.load.indirect.f32 %p : !util.ptr<f32> -> f32
    vm.global.store.indirect.f32 %v, %p : f32 -> !util.ptr<f32>
    %r = vm.sub.f32 %old, %v : f32
    vm.return %r : f32
  }

  vm.export @global_indirect_f64
  vm.func @global_indirect_f64(%v: f64) -> f64 {
    %p = vm.global.address @g_f64 : !util.ptr<f64>
    %old = vm.global.load.indirect.f64 %p : !util.ptr<f64> -> f64
    vm.global.store.indirect.f64 %v, %p : f64 -> !util.ptr<f64>
    vm.return %old : f64
  }

  // Stores a buffer of |length| bytes in @g_buffer (directly or through its
  // address) and returns the length of what was there before (-1: none).
  vm.export @global_ref
  vm.func @global_ref(%length: i64, %indirect: i32) -> i64 {
    %c16 = vm.const.i32 16
    %none = vm.const.i64 -1
    %buffer = vm.buffer.alloc %length, %c16 : !vm.buffer
    %p = vm.global.address @g_buffer : !util.ptr<!vm.buffer>
    %old_direct = vm.global.load.ref @g_buffer : !vm.buffer
    %old_indirect = vm.global.load.indirect.ref %p : !util.ptr<!vm.buffer> -> !vm.buffer
    %old = vm.select.ref %indirect, %old_indirect, %old_direct : !vm.buffer
    vm.cond_br %indirect, ^indirect, ^direct
  ^indirect:
    vm.global.store.indirect.ref %buffer, %p : !vm.buffer -> !util.ptr<!vm.buffer>
    vm.br ^done
  ^direct:
    vm.global.store.ref %buffer, @g_buffer : !vm.buffer
    vm.br ^done
  ^done:
    %present = vm.cmp.nz.ref %old : !vm.buffer
    vm.cond_br %present, ^length(%old : !vm.buffer), ^missing
  ^length(%b: !vm.buffer):
    %n = vm.buffer.length %b : !vm.buffer -> i64
    vm.return %n : i64
  ^missing:
    vm.return %none : i64
  }

  //===--------------------------------------------------------------------===//
  // Buffers: fill a 16-byte buffer with |v|, store |v| + 1 at |index| (in
  // elements), return what loads give back (an index out of range fails)
  //===--------------------------------------------------------------------===//

  vm.export @buffer_i8
  vm.func @buffer_i8(%v: i32, %index: i64) -> i32 {
    %c0 = vm.const.i64 0
    %c1 = vm.const.i32 1
    %c16 = vm.const.i64 16
    %c8 = vm.const.i32 8
    %align = vm.const.i32 16
    %buf = vm.buffer.alloc %c16, %align : !vm.buffer
    vm.buffer.fill.i8 %buf, %c0, %c16, %v : i32 -> !vm.buffer
    %w = vm.add.i32 %v, %c1 : i32
    vm.buffer.store.i8 %w, %buf[%index] : i32 -> !vm.buffer
    %s = vm.buffer.load.i8.s %buf[%index] : !vm.buffer -> i32
    %u = vm.buffer.load.i8.u %buf[%c0] : !vm.buffer -> i32
    %hi = vm.shl.i32 %s, %c8 : i32
    %r = vm.xor.i32 %hi, %u : i32
    vm.return %r : i32
  }

  vm.export @buffer_i16
  vm.func @buffer_i16(%v: i32, %index: i64) -> i32 {
    %c0 = vm.const.i64 0
    %c1 = vm.const.i32 1
    %c8 = vm.const.i64 8
    %c16 = vm.const.i32 16
    %c16b = vm.const.i64 16
    %align = vm.const.i32 16
    %buf = vm.buffer.alloc %c16b, %align : !vm.buffer
    vm.buffer.fill.i16 %buf, %c0, %c8, %v : i32 -> !vm.buffer
    %w = vm.add.i32 %v, %c1 : i32
    vm.buffer.store.i16 %w, %buf[%index] : i32 -> !vm.buffer
    %s = vm.buffer.load.i16.s %buf[%index] : !vm.buffer -> i32
    %u = vm.buffer.load.i16.u %buf[%c0] : !vm.buffer -> i32
    %hi = vm.shl.i32 %s, %c16 : i32
    %r = vm.xor.i32 %hi, %u : i32
    vm.return %r : i32
  }

  vm.export @buffer_i32
  vm.func @buffer_i32(%v: i32, %index: i64) -> i32 {
    %c0 = vm.const.i64 0
    %c1 = vm.const.i32 1
    %c4 = vm.const.i64 4
    %c16 = vm.const.i64 16
    %align = vm.const.i32 16
    %buf = vm.buffer.alloc %c16, %align : !vm.buffer
    vm.buffer.fill.i32 %buf, %c0, %c4, %v : i32 -> !vm.buffer
    %w = vm.add.i32 %v, %c1 : i32
    vm.buffer.store.i32 %w, %buf[%index] : i32 -> !vm.buffer
    %a = vm.buffer.load.i32 %buf[%index] : !vm.buffer -> i32
    %b = vm.buffer.load.i32 %buf[%c0] : !vm.buffer -> i32
    %r = vm.sub.i32 %a, %b : i32
    vm.return %r : i32
  }

  vm.export @buffer_i64
  vm.func @buffer_i64(%v: i64, %index: i64) -> i64 {
    %c0 = vm.const.i64 0
    %c1 = vm.const.i64 1
    %c2 = vm.const.i64 2
    %c16 = vm.const.i64 16
    %align = vm.const.i32 16
    %buf = vm.buffer.alloc %c16, %align : !vm.buffer
    vm.buffer.fill.i64 %buf, %c0, %c2, %v : i64 -> !vm.buffer
    %w = vm.add.i64 %v, %c1 : i64
    vm.buffer.store.i64 %w, %buf[%index] : i64 -> !vm.buffer
    %a = vm.buffer.load.i64 %buf[%index] : !vm.buffer -> i64
    %b = vm.buffer.load.i64 %buf[%c0] : !vm.buffer -> i64
    %r = vm.xor.i64 %a, %b : i64
    vm.return %r : i64
  }

  vm.export @buffer_f32
  vm.func @buffer_f32(%v: f32, %index: i64) -> f32 {
    %c0 = vm.const.i64 0
    %c4 = vm.const.i64 4
    %c16 = vm.const.i64 16
    %half = vm.const.f32 0.5
    %align = vm.const.i32 16
    %buf = vm.buffer.alloc %c16, %align : !vm.buffer
    vm.buffer.fill.f32 %buf, %c0, %c4, %v : f32 -> !vm.buffer
    %w = vm.mul.f32 %v, %half : f32
    vm.buffer.store.f32 %w, %buf[%index] : f32 -> !vm.buffer
    %a = vm.buffer.load.f32 %buf[%index] : !vm.buffer -> f32
    %b = vm.buffer.load.f32 %buf[%c0] : !vm.buffer -> f32
    %r = vm.add.f32 %a, %b : f32
    vm.return %r : f32
  }

  vm.export @buffer_f64
  vm.func @buffer_f64(%v: f64, %w: f64, %index: i64) -> f64 {
    %c0 = vm.const.i64 0
    %c2 = vm.const.i64 2
    %c16 = vm.const.i64 16
    %align = vm.const.i32 16
    %buf = vm.buffer.alloc %c16, %align : !vm.buffer
    vm.buffer.fill.f64 %buf, %c0, %c2, %v : f64 -> !vm.buffer
    vm.buffer.store.f64 %w, %buf[%index] : f64 -> !vm.buffer
    %b = vm.buffer.load.f64 %buf[%c0] : !vm.buffer -> f64
    vm.return %b : f64
  }

  // Copies |length| bytes of @bytes from |from| into a zeroed 16-byte buffer
  // at |to|, then: compare flag, a clone's length and the byte at |to|.
  vm.export @buffer_copy
  vm.func @buffer_copy(%from: i64, %to: i64, %length: i64) -> (i32, i64, i32) {
    %c0 = vm.const.i64 0
    %c16 = vm.const.i64 16
    %align = vm.const.i32 16
    %zero = vm.const.i32.zero
    %bytes = vm.const.ref.rodata @bytes : !vm.buffer
    %buf = vm.buffer.alloc %c16, %align : !vm.buffer
    vm.buffer.fill.i8 %buf, %c0, %c16, %zero : i32 -> !vm.buffer
    vm.buffer.copy %bytes, %from, %buf, %to, %length : !vm.buffer -> !vm.buffer
    %same = vm.buffer.compare %bytes, %from, %buf, %to, %length : !vm.buffer, !vm.buffer
    %clone = vm.buffer.clone %buf, %to, %length, %align : !vm.buffer -> !vm.buffer
    %n = vm.buffer.length %clone : !vm.buffer -> i64
    %first = vm.buffer.load.i8.u %buf[%to] : !vm.buffer -> i32
    vm.return %same, %n, %first : i32, i64, i32
  }

  // Writing into read-only data fails.
  vm.export @buffer_store_rodata
  vm.func @buffer_store_rodata(%v: i32) -> i32 {
    %c0 = vm.const.i64 0
    %bytes = vm.const.ref.rodata @bytes : !vm.buffer
    vm.buffer.store.i8 %v, %bytes[%c0] : i32 -> !vm.buffer
    %r = vm.buffer.load.i8.u %bytes[%c0] : !vm.buffer -> i32
    vm.return %r : i32
  }

  vm.export @buffer_hash
  vm.func @buffer_hash(%from: i64, %length: i64) -> i64 {
    %bytes = vm.const.ref.rodata @bytes : !vm.buffer
    %h = vm.buffer.hash %bytes, %from, %length : !vm.buffer -> i64
    vm.return %h : i64
  }

  // An inline rodata and a table of them: the |index|-th entry's first byte.
  vm.export @rodata_table
  vm.func @rodata_table(%index: i32) -> i32 {
    %c0 = vm.const.i64 0
    %c4 = vm.const.i64 4
    %inline = vm.rodata.inline "inline" : !vm.buffer = dense<[21, 22, 23, 24]> : tensor<4xi8>
    %table, %data = vm.rodata.table.inline i32 : !vm.buffer, !vm.buffer = [dense<[31, 32]> : tensor<2xi8>, dense<[41, 42, 43]> : tensor<3xi8>]
    %i = vm.ext.i32.i64.u %index : i32 -> i64
    %entry = vm.mul.i64 %i, %c4 : i64
    %c8 = vm.const.i64 8
    %offset_at = vm.mul.i64 %i, %c8 : i64
    %offset = vm.buffer.load.i32 %table[%offset_at] : !vm.buffer -> i32
    %offset64 = vm.ext.i32.i64.u %offset : i32 -> i64
    %first = vm.buffer.load.i8.u %data[%offset64] : !vm.buffer -> i32
    %inline0 = vm.buffer.load.i8.u %inline[%c0] : !vm.buffer -> i32
    %r = vm.add.i32 %first, %inline0 : i32
    vm.return %r : i32
  }

  //===--------------------------------------------------------------------===//
  // Lists
  //===--------------------------------------------------------------------===//

  // A list of |n| values: set element |i| to |v|, return (element |i|, size).
  vm.export @list_i32
  vm.func @list_i32(%n: i32, %i: i32, %v: i32) -> (i32, i32) {
    %list = vm.list.alloc %n : (i32) -> !vm.list<i32>
    vm.list.reserve %list, %n : (!vm.list<i32>, i32)
    vm.list.resize %list, %n : (!vm.list<i32>, i32)
    vm.list.set.i32 %list, %i, %v : (!vm.list<i32>, i32, i32)
    %got = vm.list.get.i32 %list, %i : (!vm.list<i32>, i32) -> i32
    %size = vm.list.size %list : (!vm.list<i32>) -> i32
    vm.return %got, %size : i32, i32
  }

  vm.export @list_i64
  vm.func @list_i64(%n: i32, %i: i32, %v: i64) -> i64 {
    %list = vm.list.alloc %n : (i32) -> !vm.list<i64>
    vm.list.resize %list, %n : (!vm.list<i64>, i32)
    vm.list.set.i64 %list, %i, %v : (!vm.list<i64>, i32, i64)
    %got = vm.list.get.i64 %list, %i : (!vm.list<i64>, i32) -> i64
    vm.return %got : i64
  }

  // Elements of a resized list start as zero.
  vm.export @list_zero_f32
  vm.func @list_zero_f32(%n: i32, %i: i32) -> f32 {
    %list = vm.list.alloc %n : (i32) -> !vm.list<f32>
    vm.list.resize %list, %n : (!vm.list<f32>, i32)
    %got = vm.list.get.f32 %list, %i : (!vm.list<f32>, i32) -> f32
    vm.return %got : f32
  }

  vm.export @list_f32
  vm.func @list_f32(%n: i32, %i: i32, %v: f32) -> f32 {
    %list = vm.list.alloc %n : (i32) -> !vm.list<f32>
    vm.list.resize %list, %n : (!vm.list<f32>, i32)
    vm.list.set.f32 %list, %i, %v : (!vm.list<f32>, i32, f32)
    %got = vm.list.get.f32 %list, %i : (!vm.list<f32>, i32) -> f32
    vm.return %got : f32
  }

  // Elements of a resized list start as zero.
  vm.export @list_zero_f64
  vm.func @list_zero_f64(%n: i32, %i: i32) -> f64 {
    %list = vm.list.alloc %n : (i32) -> !vm.list<f64>
    vm.list.resize %list, %n : (!vm.list<f64>, i32)
    %got = vm.list.get.f64 %list, %i : (!vm.list<f64>, i32) -> f64
    vm.return %got : f64
  }

  vm.export @list_f64
  vm.func @list_f64(%n: i32, %i: i32, %v: f64) -> f64 {
    %list = vm.list.alloc %n : (i32) -> !vm.list<f64>
    vm.list.resize %list, %n : (!vm.list<f64>, i32)
    vm.list.set.f64 %list, %i, %v : (!vm.list<f64>, i32, f64)
    %got = vm.list.get.f64 %list, %i : (!vm.list<f64>, i32) -> f64
    vm.return %got : f64
  }

  // A variant list holding a buffer at |i| (and nothing elsewhere): the
  // length of the buffer read back.
  vm.export @list_ref
  vm.func @list_ref(%length: i64, %i: i32) -> i64 {
    %c2 = vm.const.i32 2
    %align = vm.const.i32 16
    %buf = vm.buffer.alloc %length, %align : !vm.buffer
    %list = vm.list.alloc %c2 : (i32) -> !vm.list<?>
    vm.list.resize %list, %c2 : (!vm.list<?>, i32)
    vm.list.set.ref %list, %i, %buf : (!vm.list<?>, i32, !vm.buffer)
    %got = vm.list.get.ref %list, %i : (!vm.list<?>, i32) -> !vm.buffer
    %n = vm.buffer.length %got : !vm.buffer -> i64
    vm.return %n : i64
  }

  // A variant list element read as an any-ref and cast to a buffer.
  vm.export @list_any_cast
  vm.func @list_any_cast(%length: i64) -> i64 {
    %c0 = vm.const.i32 0
    %c1 = vm.const.i32 1
    %align = vm.const.i32 16
    %buf = vm.buffer.alloc %length, %align : !vm.buffer
    %list = vm.list.alloc %c1 : (i32) -> !vm.list<?>
    vm.list.resize %list, %c1 : (!vm.list<?>, i32)
    vm.list.set.ref %list, %c0, %buf : (!vm.list<?>, i32, !vm.buffer)
    %any = vm.list.get.ref %list, %c0 : (!vm.list<?>, i32) -> !vm.ref<?>
    %back = vm.cast.any.ref %any : !vm.ref<?> -> !vm.buffer
    %n = vm.buffer.length %back : !vm.buffer -> i64
    vm.return %n : i64
  }

  //===--------------------------------------------------------------------===//
  // Refs
  //===--------------------------------------------------------------------===//

  // (a == b, a != b, a != null, b selected by |pick| is a) for two buffers,
  // |same| choosing whether b is a.
  vm.export @ref_compare
  vm.func @ref_compare(%same: i32, %pick: i32) -> (i32, i32, i32, i32) {
    %c4 = vm.const.i64 4
    %align = vm.const.i32 16
    %a = vm.buffer.alloc %c4, %align : !vm.buffer
    %other = vm.buffer.alloc %c4, %align : !vm.buffer
    %null = vm.const.ref.zero : !vm.buffer
    %b = vm.select.ref %same, %a, %other : !vm.buffer
    %eq = vm.cmp.eq.ref %a, %b : !vm.buffer
    %ne = vm.cmp.ne.ref %a, %b : !vm.buffer
    %nz = vm.cmp.nz.ref %a : !vm.buffer
    %chosen = vm.select.ref %pick, %b, %null : !vm.buffer
    %is_a = vm.cmp.eq.ref %chosen, %a : !vm.buffer
    vm.return %eq, %ne, %nz, %is_a : i32, i32, i32, i32
  }

  // A buffer cast to a list fails.
  vm.export @ref_bad_cast
  vm.func @ref_bad_cast(%n: i64) -> i32 {
    %align = vm.const.i32 16
    %buf = vm.buffer.alloc %n, %align : !vm.buffer
    %any = vm.cast.ref.any %buf : !vm.buffer -> !vm.ref<?>
    %list = vm.cast.any.ref %any : !vm.ref<?> -> !vm.list<i32>
    %size = vm.list.size %list : (!vm.list<i32>) -> i32
    vm.return %size : i32
  }

  //===--------------------------------------------------------------------===//
  // Control flow and calls
  //===--------------------------------------------------------------------===//

  // A constant of each kind: (0.0f, 0.0, 0.125, 0).
  vm.export @constants
  vm.func @constants() -> (f32, f64, f64, i64) {
    %zf = vm.const.f32.zero
    %zd = vm.const.f64.zero
    %d = vm.const.f64 0.125
    %zi = vm.const.i64.zero
    vm.return %zf, %zd, %d, %zi : f32, f64, f64, i64
  }

  vm.export @switch_i32
  vm.func @switch_i32(%index: i32) -> i32 {
    %a = vm.const.i32 100
    %b = vm.const.i32 200
    %c = vm.const.i32 300
    %default = vm.const.i32 -1
    %r = vm.switch.i32 %index[%a, %b, %c] else %default : i32
    vm.return %r : i32
  }

  vm.export @switch_i64
  vm.func @switch_i64(%index: i32) -> i64 {
    %a = vm.const.i64 1000000000000
    %b = vm.const.i64 -5
    %default = vm.const.i64 7
    %r = vm.switch.i64 %index[%a, %b] else %default : i64
    vm.return %r : i64
  }

  vm.export @switch_f32
  vm.func @switch_f32(%index: i32) -> f32 {
    %a = vm.const.f32 0.25
    %b = vm.const.f32 -8.5
    %default = vm.const.f32.zero
    %r = vm.switch.f32 %index[%a, %b] else %default : f32
    vm.return %r : f32
  }

  vm.export @switch_f64
  vm.func @switch_f64(%index: i32) -> f64 {
    %a = vm.const.f64 0.125
    %default = vm.const.f64.zero
    %r = vm.switch.f64 %index[%a] else %default : f64
    vm.return %r : f64
  }

  vm.export @switch_ref
  vm.func @switch_ref(%index: i32) -> i64 {
    %c3 = vm.const.i64 3
    %c5 = vm.const.i64 5
    %c9 = vm.const.i64 9
    %align = vm.const.i32 16
    %a = vm.buffer.alloc %c3, %align : !vm.buffer
    %b = vm.buffer.alloc %c5, %align : !vm.buffer
    %default = vm.buffer.alloc %c9, %align : !vm.buffer
    %r = vm.switch.ref %index[%a, %b] else %default : !vm.buffer
    %n = vm.buffer.length %r : !vm.buffer -> i64
    vm.return %n : i64
  }

  // A branch table and a loop: the sum 1 + ... + |n| for |kind| 0, |n| * 3
  // for 1, and -|n| otherwise.
  vm.export @branches
  vm.func @branches(%kind: i32, %n: i32) -> i32 {
    %c0 = vm.const.i32 0
    %c1 = vm.const.i32 1
    %c3 = vm.const.i32 3
    vm.br_table %kind {
      default: ^negate(%n : i32),
      0: ^loop(%c0, %c1 : i32, i32),
      1: ^triple
    }
  ^loop(%sum: i32, %i: i32):
    %more = vm.cmp.lte.i32.s %i, %n : i32
    %next_sum = vm.add.i32 %sum, %i : i32
    %next_i = vm.add.i32 %i, %c1 : i32
    vm.cond_br %more, ^loop(%next_sum, %next_i : i32, i32), ^done(%sum : i32)
  ^triple:
    %t = vm.call @times(%n, %c3) : (i32, i32) -> i32
    vm.br ^done(%t : i32)
  ^negate(%x: i32):
    %neg = vm.sub.i32 %c0, %x : i32
    vm.br ^done(%neg : i32)
  ^done(%r: i32):
    vm.return %r : i32
  }

  vm.func private @times(%a: i32, %b: i32) -> i32 {
    %r = vm.mul.i32 %a, %b : i32
    vm.return %r : i32
  }

  // Fails with status code |code| when it is not 0; the optional import is
  // absent, so the result counts that too.
  vm.export @fail_with
  vm.func @fail_with(%code: i32) -> i32 {
    %resolved = vm.import.resolved @absent.function : i32
    %kept = vm.optimization_barrier %code : i32
    vm.cond_fail %kept, "failing on request"
    vm.return %resolved : i32
  }

  vm.export @fail_always
  vm.func @fail_always(%code: i32) -> i32 {
    vm.fail %code, "always failing"
  }

  // Passes when a == b != 0 (the last check then fails: a != b).
  vm.export @checks
  vm.func @checks(%a: i32, %b: i32) -> i32 {
    vm.check.nz %a, "a != 0" : i32
    vm.check.eq %a, %b, "a == b" : i32
    vm.check.ne %a, %b, "a != b" : i32
    vm.return %a : i32
  }

  vm.export @check_nearly_equal
  vm.func @check_nearly_equal(%a: f32, %b: f32) -> f32 {
    vm.check.nearly_eq %a, %b, "a ~ b" : f32
    vm.return %a : f32
  }

  vm.export @trace
  vm.func @trace(%a: i32) -> i32 {
    vm.trace "trace"(%a) : i32
    vm.return %a : i32
  }

  vm.export @print
  vm.func @print(%a: i32) -> i32 {
    vm.print "print"(%a) : i32
    vm.return %a : i32
  }

  vm.export @breakpoint
  vm.func @breakpoint(%a: i32) -> i32 {
    vm.break ^next(%a : i32)
  ^next(%b: i32):
    vm.return %b : i32
  }

  vm.export @conditional_breakpoint
  vm.func @conditional_breakpoint(%a: i32) -> i32 {
    vm.cond_break %a, ^done(%a : i32)
  ^done(%b: i32):
    vm.return %b : i32
  }

  // Yields once, then returns |a| + 1.
  vm.export @yielding
  vm.func @yielding(%a: i32) -> i32 {
    %c1 = vm.const.i32 1
    vm.yield ^resume
  ^resume:
    %r = vm.add.i32 %a, %c1 : i32
    vm.return %r : i32
  }
}
