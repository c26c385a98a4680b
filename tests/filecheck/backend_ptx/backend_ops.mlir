// The backend ops (ops/ptx/memory.py, ops/ptx/control.py): custom syntax round trip,
// generic syntax round trip, and the PTX line each prints.
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s -t ptx | filecheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @memory
// PTX-LABEL: .visible .entry memory(
func.func @memory(%g: !ptx.ptr<global>, %i: i64, %w: i32, %v: f32) {
  // CHECK: ptx.alloc shared @tile size 256 align 128
  // CHECK-NEXT: ptx.alloc local @scratch size 16 align 16
  // PTX: .shared .align 128 .b8 tile[256];
  // PTX-NEXT: .local .align 16 .b8 scratch[16];
  ptx.alloc shared @tile size 256 align 128
  ptx.alloc local @scratch size 16 align 16
  // CHECK: %s = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  // CHECK-NEXT: %l = ptx.mov.addr @scratch : !ptx.ptr<local>
  // PTX: mov.u32 %[[S:r[0-9]+]], tile;
  // PTX-NEXT: mov.u64 %[[L:rd[0-9]+]], scratch;
  %s = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %l = ptx.mov.addr @scratch : !ptx.ptr<local>
  // CHECK: %a = ptx.ld f32 %g offset 16 : !ptx.ptr<global> -> f32
  // PTX: ld.global.f32 %[[A:f[0-9]+]], [%[[G:rd[0-9]+]]+16];
  %a = ptx.ld f32 %g offset 16 : !ptx.ptr<global> -> f32
  // CHECK-NEXT: %b = ptx.ld u8 %l offset -4 : !ptx.ptr<local> -> i16
  // PTX-NEXT: ld.local.u8 %rs1, [%[[L]]+-4];
  %b = ptx.ld u8 %l offset -4 : !ptx.ptr<local> -> i16
  // CHECK-NEXT: ptx.st f32 %s, %a : !ptx.ptr<shared::cta>, f32
  // PTX-NEXT: st.shared::cta.f32 [%[[S]]], %[[A]];
  ptx.st f32 %s, %a : !ptx.ptr<shared::cta>, f32
  // CHECK-NEXT: %q = ptx.add.ptr %g, %i : !ptx.ptr<global>, i64
  // PTX-NEXT: add.u64 %{{rd[0-9]+}}, %[[G]], %{{rd[0-9]+}};
  %q = ptx.add.ptr %g, %i : !ptx.ptr<global>, i64
  // CHECK-NEXT: %q2 = ptx.add.ptr %s, %w : !ptx.ptr<shared::cta>, i32
  // PTX-NEXT: add.u32 %{{r[0-9]+}}, %[[S]], %{{r[0-9]+}};
  %q2 = ptx.add.ptr %s, %w : !ptx.ptr<shared::cta>, i32
  // CHECK-NEXT: %c = ptx.mov %s : !ptx.ptr<shared::cta> -> !ptx.ptr<shared::cluster>
  // PTX-NEXT: mov.b32 %{{r[0-9]+}}, %[[S]];
  %c = ptx.mov %s : !ptx.ptr<shared::cta> -> !ptx.ptr<shared::cluster>
  // CHECK-NEXT: %sv = ptx.ld f32 %c : !ptx.ptr<shared::cluster> -> f32
  // PTX-NEXT: ld.shared::cluster.f32
  %sv = ptx.ld f32 %c : !ptx.ptr<shared::cluster> -> f32
  // CHECK-NEXT: %p = ptx.ld.param u64 @memory_param_0 : i64
  // CHECK-NEXT: %gp = ptx.cvta.to.global %p : i64
  // PTX-NEXT: ld.param.u64 %[[P:rd[0-9]+]], [memory_param_0];
  // PTX-NEXT: cvta.to.global.u64 %{{rd[0-9]+}}, %[[P]];
  %p = ptx.ld.param u64 @memory_param_0 : i64
  %gp = ptx.cvta.to.global %p : i64
  // CHECK-NEXT: %k1 = ptx.mov.imm 42 : i32
  // CHECK-NEXT: %k2 = ptx.mov.imm -7 : i64
  // CHECK-NEXT: %k3 = ptx.mov.imm 1.000000e+00 : f32
  // CHECK-NEXT: %k4 = ptx.mov.imm 2.500000e-01 : f64
  // CHECK-NEXT: %k5 = ptx.mov.imm 1.000000e+00 : f16
  // CHECK-NEXT: %k6 = ptx.mov.imm 1.000000e+00 : bf16
  // CHECK-NEXT: %k7 = ptx.mov.imm true
  // PTX-NEXT: mov.u32 %{{r[0-9]+}}, 42;
  // PTX-NEXT: mov.s64 %{{rd[0-9]+}}, -7;
  // PTX-NEXT: mov.f32 %{{f[0-9]+}}, 0f3F800000;
  // PTX-NEXT: mov.f64 %{{fd[0-9]+}}, 0d3FD0000000000000;
  // PTX-NEXT: mov.b16 %{{h[0-9]+}}, 0x3C00;
  // PTX-NEXT: mov.b16 %{{h[0-9]+}}, 0x3F80;
  // PTX-NEXT: mov.pred %{{p[0-9]+}}, 1;
  %k1 = ptx.mov.imm 42 : i32
  %k2 = ptx.mov.imm -7 : i64
  %k3 = ptx.mov.imm 1.0 : f32
  %k4 = ptx.mov.imm 0.25 : f64
  %k5 = ptx.mov.imm 1.0 : f16
  %k6 = ptx.mov.imm 1.0 : bf16
  %k7 = ptx.mov.imm true
  func.return
}

// CHECK-LABEL: func.func @control
// PTX-LABEL: .visible .entry control(
func.func @control(%a: i32, %b: i32, %x: f32, %n: i64) {
  // CHECK: %p = ptx.setp lt s32 %a, %b : i32, i32
  // PTX: setp.lt.s32 %[[P:p[0-9]+]], %[[A:r[0-9]+]], %[[B:r[0-9]+]];
  %p = ptx.setp lt s32 %a, %b : i32, i32
  // CHECK-NEXT: %p2 = ptx.setp hs u32 %a, %b : i32, i32
  // PTX-NEXT: setp.hs.u32
  %p2 = ptx.setp hs u32 %a, %b : i32, i32
  // CHECK-NEXT: %p3 = ptx.setp nan f32 %x, %x : f32, f32
  // PTX-NEXT: setp.nan.f32
  %p3 = ptx.setp nan f32 %x, %x : f32, f32
  // CHECK-NEXT: %s = ptx.selp b32 %a, %b, %p : i32, i32 -> i32
  // PTX-NEXT: selp.b32 %{{r[0-9]+}}, %[[A]], %[[B]], %[[P]];
  %s = ptx.selp b32 %a, %b, %p : i32, i32 -> i32
  // CHECK-NEXT: %w = ptx.cvt s64 s32 %a : i32 -> i64
  // PTX-NEXT: cvt.s64.s32 %{{rd[0-9]+}}, %[[A]];
  %w = ptx.cvt s64 s32 %a : i32 -> i64
  // CHECK-NEXT: %f = ptx.cvt rn f32 s32 %a : i32 -> f32
  // PTX-NEXT: cvt.rn.f32.s32
  %f = ptx.cvt rn f32 s32 %a : i32 -> f32
  // CHECK-NEXT: %i = ptx.cvt rzi s32 f32 %x : f32 -> i32
  // PTX-NEXT: cvt.rzi.s32.f32
  %i = ptx.cvt rzi s32 f32 %x : f32 -> i32
  // CHECK-NEXT: %h = ptx.cvt rn bf16 f32 %x : f32 -> bf16
  // PTX-NEXT: cvt.rn.bf16.f32
  %h = ptx.cvt rn bf16 f32 %x : f32 -> bf16
  // CHECK-NEXT: ptx.bra.cond %p, ^bb1, ^bb2
  // PTX-NEXT: @%[[P]] bra $L__BB1_1;
  // PTX-NEXT: bra.uni $L__BB1_2;
  ptx.bra.cond %p, ^bb1, ^bb2
^bb1:
  // CHECK: ptx.bra ^bb3(%a : i32)
  // PTX: $L__BB1_1:
  // PTX-NEXT: mov.b32 %[[J:r[0-9]+]], %[[A]];
  // PTX-NEXT: bra.uni $L__BB1_3;
  ptx.bra ^bb3(%a : i32)
^bb2:
  ptx.bra ^bb3(%b : i32)
^bb3(%j: i32):
  // CHECK: ptx.ret
  // PTX: $L__BB1_3:
  // PTX-NEXT: ret;
  ptx.ret
}
