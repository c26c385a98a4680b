// Block arguments become register moves on each branch edge, ordered as a parallel
// copy: a swap of two loop-carried values goes through a temporary register.
// RUN: bulkred-opt %s --split-input-file -t ptx | filecheck %s

// CHECK-LABEL: .visible .entry swap_loop(
// CHECK:        .reg .pred %p<2>;
// CHECK-NEXT:   .reg .b32 %r<6>;
// CHECK-NEXT:   .reg .f32 %f<6>;
// CHECK:        ld.param.u32 %r1, [swap_loop_param_0];
// CHECK-NEXT:   ld.param.f32 %f1, [swap_loop_param_1];
// CHECK-NEXT:   ld.param.f32 %f2, [swap_loop_param_2];
// CHECK-NEXT:   mov.u32 %r2, 0;
// CHECK-NEXT:   mov.u32 %r3, 1;
// The entry edge: three independent moves.
// CHECK-NEXT:   mov.b32 %r4, %r2;
// CHECK-NEXT:   mov.b32 %f3, %f1;
// CHECK-NEXT:   mov.b32 %f4, %f2;
// CHECK-NEXT:   bra.uni $L__BB0_1;
// CHECK-NEXT: $L__BB0_1:
// CHECK-NEXT:   setp.lt.s32 %p1, %r4, %r1;
// CHECK-NEXT:   @%p1 bra $L__BB0_2;
// CHECK-NEXT:   bra.uni $L__BB0_3;
// CHECK-NEXT: $L__BB0_2:
// CHECK-NEXT:   add.s32 %r5, %r4, %r3;
// The back edge: (i, x, y) <- (i + 1, y, x); x and y form a cycle.
// CHECK-NEXT:   mov.b32 %r4, %r5;
// CHECK-NEXT:   mov.b32 %f5, %f3;
// CHECK-NEXT:   mov.b32 %f3, %f4;
// CHECK-NEXT:   mov.b32 %f4, %f5;
// CHECK-NEXT:   bra.uni $L__BB0_1;
// CHECK-NEXT: $L__BB0_3:
// CHECK-NEXT:   ret;
func.func @swap_loop(%n: i32, %x0: f32, %y0: f32) {
  %c0 = ptx.mov.imm 0 : i32
  %c1 = ptx.mov.imm 1 : i32
  ptx.bra ^cond(%c0, %x0, %y0 : i32, f32, f32)
^cond(%i: i32, %x: f32, %y: f32):
  %p = ptx.setp lt s32 %i, %n : i32, i32
  ptx.bra.cond %p, ^body, ^exit
^body:
  %next = ptx.add s32 %i, %c1 : i32
  ptx.bra ^cond(%next, %y, %x : i32, f32, f32)
^exit:
  func.return
}

// -----

// A chain (a, b) <- (b, c): a must read b before b is overwritten; no temporary.
// RUN: bulkred-opt %s --split-input-file -t ptx | filecheck %s --check-prefix=CHAIN
// CHAIN-LABEL: .visible .entry chain(
// CHAIN:        ld.param.u64 %rd3, [chain_param_2];
// CHAIN-NEXT:   mov.b64 %[[A:rd[0-9]+]], %rd1;
// CHAIN-NEXT:   mov.b64 %[[B:rd[0-9]+]], %rd2;
// CHAIN-NEXT:   bra.uni $L__BB0_1;
// CHAIN-NEXT: $L__BB0_1:
// CHAIN-NEXT:   mov.b64 %[[A]], %[[B]];
// CHAIN-NEXT:   mov.b64 %[[B]], %rd3;
// CHAIN-NEXT:   bra.uni $L__BB0_1;
func.func @chain(%a0: i64, %b0: i64, %c: i64) {
  ptx.bra ^loop(%a0, %b0 : i64, i64)
^loop(%a: i64, %b: i64):
  ptx.bra ^loop(%b, %c : i64, i64)
}
