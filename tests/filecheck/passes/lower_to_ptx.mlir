// lower-to-ptx: level-2 IR (memref, arith index math, scf) into ptx ops.
// RUN: bulkred-opt %s --split-input-file -p lower-to-ptx | filecheck %s
// The output is level-3 IR that parses back: no memref, arith, scf or cf op and no
// index value is left.
// RUN: bulkred-opt %s --split-input-file -p lower-to-ptx | bulkred-opt --split-input-file | filecheck %s --check-prefix=NOLEFT
// NOLEFT-NOT: memref.
// NOLEFT-NOT: arith.
// NOLEFT-NOT: scf.
// NOLEFT-NOT: cf.
// NOLEFT-NOT: {{[:(,] ?index\b}}
// Created ops keep the location of the op they replace.
// RUN: bulkred-opt %s --split-input-file -p lower-to-ptx --print-debuginfo | filecheck %s --check-prefix=LOC
// With a target, the module records it for `-t ptx`.
// RUN: bulkred-opt %s --split-input-file -p 'lower-to-ptx{target=sm_100a}' | filecheck %s --check-prefix=TARGET
// TARGET: builtin.module attributes {bulkred.target = "sm_100a"}

// Global memref arguments become !ptx.ptr<global>; constant indices fold into the
// ld/st offset (element 3 of f32 is byte 12); index arguments become i64.
// CHECK-LABEL: func.func @global_args
// CHECK-SAME: (%A: !ptx.ptr<global>, %B: !ptx.ptr<global>, %n: i64)
// CHECK-NEXT: %[[V:.*]] = ptx.ld f32 %A offset 12 : !ptx.ptr<global> -> f32
// CHECK-NEXT: ptx.st f32 %B, %[[V]] : !ptx.ptr<global>, f32
// CHECK-NEXT: ptx.ret
func.func @global_args(%A: memref<8xf32, #bulkred.scope<global>>, %B: memref<1xf32, #bulkred.scope<global>>, %n: index) {
  %c3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  %v = memref.load %A[%c3] : memref<8xf32, #bulkred.scope<global>>
  memref.store %v, %B[%c0] : memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A dynamic index: byte offset = i * 8 (f64) in 64-bit arithmetic, then add.ptr.
// CHECK-LABEL: func.func @dynamic_index
// CHECK: %[[C8:.*]] = ptx.mov.imm 8 : i64
// CHECK-NEXT: %[[OFF:.*]] = ptx.mul.lo s64 %i, %[[C8]] : i64
// CHECK-NEXT: %[[P:.*]] = ptx.add.ptr %A, %[[OFF]] : !ptx.ptr<global>, i64
// CHECK-NEXT: ptx.ld f64 %[[P]] : !ptx.ptr<global> -> f64
func.func @dynamic_index(%A: memref<8xf64, #bulkred.scope<global>>, %i: index) {
  %v = memref.load %A[%i] : memref<8xf64, #bulkred.scope<global>>
  func.return
}

// -----

// 2-D: m[i, j] with a constant row: (2 * 16 + j) * 4 bytes -> j * 4 and offset 128.
// CHECK-LABEL: func.func @two_d
// CHECK: %[[C4:.*]] = ptx.mov.imm 4 : i64
// CHECK-NEXT: %[[OFF:.*]] = ptx.mul.lo s64 %j, %[[C4]] : i64
// CHECK-NEXT: %[[P:.*]] = ptx.add.ptr %A, %[[OFF]] : !ptx.ptr<global>, i64
// CHECK-NEXT: ptx.ld b32 %[[P]] offset 128 : !ptx.ptr<global> -> i32
func.func @two_d(%A: memref<4x16xi32, #bulkred.scope<global>>, %j: index) {
  %c2 = arith.constant 2 : index
  %v = memref.load %A[%c2, %j] : memref<4x16xi32, #bulkred.scope<global>>
  func.return
}

// -----

// Local and shared allocas: one declaration each at the top of the kernel (shared
// tiles of 128 bytes or more aligned to 128), the address by ptx.mov.addr; shared
// addresses are 32-bit, so the 64-bit byte offset is narrowed with cvt.u32.u64.
// CHECK-LABEL: func.func @allocas
// CHECK-NEXT: ptx.alloc local @__local0_L size 64 align 16
// CHECK-NEXT: ptx.alloc shared @__shared1_S size 256 align 128
// CHECK-NEXT: ptx.alloc shared @__shared2_M size 8 align 16
// CHECK-NEXT: %L = ptx.mov.addr @__local0_L : !ptx.ptr<local>
// CHECK-NEXT: %S = ptx.mov.addr @__shared1_S : !ptx.ptr<shared::cta>
// CHECK-NEXT: %M = ptx.mov.addr @__shared2_M : !ptx.ptr<shared::cta>
// CHECK:      %[[V:.*]] = ptx.ld b16 %L offset 6 : !ptx.ptr<local> -> f16
// CHECK:      %[[OFF:.*]] = ptx.mul.lo s64 %i, %{{.*}} : i64
// CHECK-NEXT: %[[OFF32:.*]] = ptx.cvt u32 u64 %[[OFF]] : i64 -> i32
// CHECK-NEXT: %[[P:.*]] = ptx.add.ptr %S, %[[OFF32]] : !ptx.ptr<shared::cta>, i32
// CHECK-NEXT: ptx.st b32 %[[P]], %{{.*}} : !ptx.ptr<shared::cta>, i32
// CHECK-NEXT: ptx.st b64 %M, %{{.*}} : !ptx.ptr<shared::cta>, i64
func.func @allocas(%i: index, %x: i32, %y: i64) {
  %L = memref.alloca() : memref<32xf16, #bulkred.scope<local>>
  %S = memref.alloca() : memref<64xi32, #bulkred.scope<shared>>
  %M = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %h = memref.load %L[%c3] : memref<32xf16, #bulkred.scope<local>>
  memref.store %x, %S[%i] : memref<64xi32, #bulkred.scope<shared>>
  memref.store %y, %M[%c0] : memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// scf.for with a loop-carried value: a condition block taking (iv, acc), setp.lt.s64,
// a conditional branch, and the back edge passing the stepped iv and the new acc.
// CHECK-LABEL: func.func @loop
// CHECK:      %[[ZERO:.*]] = ptx.mov.imm 0.000000e+00 : f32
// CHECK:      ptx.bra ^[[COND:.*]](%{{.*}}, %[[ZERO]] : i64, f32)
// CHECK-NEXT: ^[[COND]](%i: i64, %acc: f32):
// CHECK-NEXT: %[[P:.*]] = ptx.setp lt s64 %i, %{{.*}} : i64, i64
// CHECK-NEXT: ptx.bra.cond %[[P]], ^[[BODY:.*]], ^[[EXIT:.*]]
// CHECK-NEXT: ^[[BODY]]:
// CHECK:      %[[S:.*]] = ptx.add rn f32 %acc, %{{.*}} : f32
// CHECK-NEXT: %[[NEXT:.*]] = ptx.add s64 %i, %{{.*}} : i64
// CHECK-NEXT: ptx.bra ^[[COND]](%[[NEXT]], %[[S]] : i64, f32)
// CHECK-NEXT: ^[[EXIT]]:
// CHECK-NEXT: ptx.st f32 %B, %acc : !ptx.ptr<global>, f32
// CHECK-NEXT: ptx.ret
func.func @loop(%A: memref<16xf32, #bulkred.scope<global>>, %B: memref<1xf32, #bulkred.scope<global>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %A[%i] : memref<16xf32, #bulkred.scope<global>>
    %s = ptx.add rn f32 %acc, %v : f32
    scf.yield %s : f32
  }
  memref.store %r, %B[%c0] : memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// scf.if with a result: each arm jumps to the join block passing its value; an
// unsigned comparison becomes setp.lo.
// CHECK-LABEL: func.func @if_result
// CHECK:      %[[P:.*]] = ptx.setp lo u64 %i, %n : i64, i64
// CHECK-NEXT: ptx.bra.cond %[[P]], ^[[T:.*]], ^[[F:.*]]
// CHECK-NEXT: ^[[T]]:
// CHECK-NEXT: ptx.bra ^[[J:.*]](%x : f32)
// CHECK-NEXT: ^[[F]]:
// CHECK-NEXT: ptx.bra ^[[J]](%y : f32)
// CHECK-NEXT: ^[[J]](%[[R:.*]]: f32):
func.func @if_result(%B: memref<1xf32, #bulkred.scope<global>>, %i: index, %n: index, %x: f32, %y: f32) {
  %c0 = arith.constant 0 : index
  %p = arith.cmpi ult, %i, %n : index
  %r = scf.if %p -> (f32) {
    scf.yield %x : f32
  } else {
    scf.yield %y : f32
  }
  memref.store %r, %B[%c0] : memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// cf.cond_br passing values: each edge with arguments goes through a new block that
// holds the ptx.bra (ptx.bra.cond itself carries none).
// CHECK-LABEL: func.func @cond_br_args
// CHECK:      ptx.bra.cond %p, ^[[E1:.*]], ^[[E2:.*]]
// CHECK-NEXT: ^[[E2]]:
// CHECK-NEXT: ptx.bra ^[[J:.*]](%b : i32)
// CHECK-NEXT: ^[[E1]]:
// CHECK-NEXT: ptx.bra ^[[J]](%a : i32)
// CHECK-NEXT: ^[[J]](%{{.*}}: i32):
func.func @cond_br_args(%p: i1, %a: i32, %b: i32) {
  cf.cond_br %p, ^bb1(%a : i32), ^bb1(%b : i32)
^bb1(%v: i32):
  func.return
}

// -----

// Casts and folds: index_cast i32 -> index is cvt.s64.s32, index -> i32 is
// cvt.u32.u64 (truncation); constant arithmetic folds to one immediate; select is selp.
// CHECK-LABEL: func.func @casts
// CHECK:      %[[W:.*]] = ptx.cvt s64 s32 %t : i32 -> i64
// CHECK:      %[[F:.*]] = ptx.mov.imm 42 : i64
// CHECK:      %[[N:.*]] = ptx.cvt u32 u64 %{{.*}} : i64 -> i32
// CHECK:      %[[P:.*]] = ptx.setp lt s32 %[[N]], %t : i32, i32
// CHECK-NEXT: %{{.*}} = ptx.selp b32 %[[N]], %t, %[[P]] : i32, i32 -> i32
func.func @casts(%B: memref<2xi32, #bulkred.scope<global>>, %t: i32) {
  %w = arith.index_cast %t : i32 to index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c42 = arith.muli %c6, %c7 : index
  %s = arith.addi %w, %c42 : index
  %n = arith.index_cast %s : index to i32
  %p = arith.cmpi slt, %n, %t : i32
  %m = arith.select %p, %n, %t : i32
  %c1 = arith.constant 1 : index
  memref.store %m, %B[%c1] : memref<2xi32, #bulkred.scope<global>>
  func.return
}

// -----

// Float immediates and a cast of a shared buffer to its shared::cluster address.
// CHECK-LABEL: func.func @constants_and_cast
// CHECK:      %{{.*}} = ptx.mov.imm -1.500000e+00 : f32
// CHECK:      %{{.*}} = ptx.mov.imm 2.500000e-01 : f64
// CHECK:      %[[C:.*]] = ptx.mov %S : !ptx.ptr<shared::cta> -> !ptx.ptr<shared::cluster>
func.func @constants_and_cast(%A: memref<2xf32, #bulkred.scope<global>>, %D: memref<1xf64, #bulkred.scope<global>>) {
  %S = memref.alloca() : memref<4xf32, #bulkred.scope<shared>>
  %c0 = arith.constant 0 : index
  %f = arith.constant -1.5 : f32
  %d = arith.constant 0.25 : f64
  memref.store %f, %A[%c0] : memref<2xf32, #bulkred.scope<global>>
  memref.store %d, %D[%c0] : memref<1xf64, #bulkred.scope<global>>
  %p = builtin.unrealized_conversion_cast %S : memref<4xf32, #bulkred.scope<shared>> to !ptx.ptr<shared::cluster>
  %q = ptx.mov %p : !ptx.ptr<shared::cluster> -> i32
  func.return
}

// -----

// scf.while with a loop-carried value and a result: the entry jumps to the "before"
// block with the operand; scf.condition branches to the "after" block or out, passing
// its values to either (an edge block each, as ptx.bra.cond carries none); the "after"
// block's yield jumps back.
// CHECK-LABEL: func.func @while_loop
// CHECK:      ptx.bra ^[[BEFORE:.*]](%{{.*}} : i32)
// CHECK-NEXT: ^[[BEFORE]](%x: i32):
// CHECK-NEXT: %[[P:.*]] = ptx.setp lt s32 %x, %n : i32, i32
// CHECK-NEXT: ptx.bra.cond %[[P]], ^[[E1:.*]], ^[[E2:.*]]
// CHECK-NEXT: ^[[E2]]:
// CHECK-NEXT: ptx.bra ^[[EXIT:.*]](%x : i32)
// CHECK-NEXT: ^[[E1]]:
// CHECK-NEXT: ptx.bra ^[[AFTER:.*]](%x : i32)
// CHECK-NEXT: ^[[AFTER]](%y: i32):
// CHECK-NEXT: %[[Y2:.*]] = ptx.add s32 %y, %y : i32
// CHECK-NEXT: ptx.bra ^[[BEFORE]](%[[Y2]] : i32)
// CHECK-NEXT: ^[[EXIT]](%[[R:.*]]: i32):
// CHECK-NEXT: ptx.st b32 %B, %[[R]] : !ptx.ptr<global>, i32
func.func @while_loop(%B: memref<1xi32, #bulkred.scope<global>>, %n: i32) {
  %c1 = arith.constant 1 : i32
  %r = scf.while (%x = %c1) : (i32) -> i32 {
    %p = arith.cmpi slt, %x, %n : i32
    scf.condition(%p) %x : i32
  } do {
  ^bb0(%y: i32):
    %y2 = ptx.add s32 %y, %y : i32
    scf.yield %y2 : i32
  }
  %c0 = arith.constant 0 : index
  memref.store %r, %B[%c0] : memref<1xi32, #bulkred.scope<global>>
  func.return
}

// -----

// A negated branch condition (arith.xori with true) costs nothing: the branch takes
// the predicate itself with its successors swapped (the wait loop of a bulk copy).
// CHECK-LABEL: func.func @spin_until_done
// CHECK:      ptx.bra ^[[SPIN:.*]]
// CHECK-NEXT: ^[[SPIN]]:
// CHECK-NEXT: %done = ptx.mbarrier.try_wait.parity %m, %{{.*}} : !ptx.ptr<shared::cta>
// CHECK-NEXT: ptx.bra.cond %done, ^[[EXIT:.*]], ^[[AGAIN:.*]]
// CHECK-NEXT: ^[[AGAIN]]:
// CHECK-NEXT: ptx.bra ^[[SPIN]]
// CHECK-NEXT: ^[[EXIT]]:
// CHECK-NEXT: ptx.ret
// CHECK-NOT:  arith.
// LOC-LABEL: func.func @spin_until_done
// LOC:       ptx.mov.imm 0 : i32 loc("{{.*}}lower_to_ptx.mlir":[[# @LINE + 7]]:3)
// LOC:       ptx.bra ^{{.*}} loc("{{.*}}lower_to_ptx.mlir":[[# @LINE + 8]]:3)
// LOC:       ptx.mbarrier.try_wait.parity {{.*}} loc("{{.*}}lower_to_ptx.mlir":[[# @LINE + 8]]:5)
// LOC:       ptx.bra.cond {{.*}} loc("{{.*}}lower_to_ptx.mlir":[[# @LINE + 9]]:5)
// LOC:       ptx.bra ^{{.*}} loc("{{.*}}lower_to_ptx.mlir":[[# @LINE + 10]]:5)
// LOC:       ptx.ret loc("{{.*}}lower_to_ptx.mlir":[[# @LINE + 11]]:3)
func.func @spin_until_done(%m: !ptx.ptr<shared::cta>) {
  %parity = arith.constant 0 : i32
  %true = arith.constant true
  scf.while () : () -> () {
    %done = ptx.mbarrier.try_wait.parity %m, %parity : !ptx.ptr<shared::cta>
    %again = arith.xori %done, %true : i1
    scf.condition(%again)
  } do {
    scf.yield
  }
  func.return
}

// -----

// Negations fold in either operand order and twice over; scf.if on a negated predicate.
// CHECK-LABEL: func.func @negated_if
// CHECK:      ptx.bra.cond %p, ^[[SKIP:.*]], ^[[THEN:.*]]
// CHECK-NEXT: ^[[THEN]]:
// CHECK-NEXT: ptx.st b32 %B, %x : !ptx.ptr<global>, i32
// CHECK-NEXT: ptx.bra ^[[SKIP]]
// CHECK-NEXT: ^[[SKIP]]:
// CHECK-NEXT: ptx.bra.cond %p, ^[[T2:.*]], ^[[J2:.*]]
// CHECK-NEXT: ^[[T2]]:
// CHECK-NEXT: ptx.st b32 %B offset 4, %x : !ptx.ptr<global>, i32
func.func @negated_if(%B: memref<2xi32, #bulkred.scope<global>>, %p: i1, %x: i32) {
  %true = arith.constant true
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %np = arith.xori %true, %p : i1
  scf.if %np {
    memref.store %x, %B[%c0] : memref<2xi32, #bulkred.scope<global>>
  }
  %nnp = arith.xori %np, %true : i1
  scf.if %nnp {
    memref.store %x, %B[%c1] : memref<2xi32, #bulkred.scope<global>>
  }
  func.return
}
