// A kernel using the math ops of fused reductions (abs, neg, sqrt, rcp, ex2, lg2, fma,
// div.float, setp/selp of f32 and f64, and/or/xor/not .pred) goes through bulkred-to-ptx
// unchanged, prints as PTX and assembles with ptxas (nvJitLink) for sm_90a and sm_100a.
// RUN: bulkred-opt %s -p 'bulkred-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=CHECK,SM90A
// RUN: bulkred-opt %s -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=CHECK,SM100A

// CHECK-LABEL: .visible .entry math(
// CHECK: abs.f32 %f3, %f1;
// CHECK-NEXT: neg.f32 %f4, %f3;
// CHECK-NEXT: sqrt.rn.f32 %f5, %f3;
// CHECK-NEXT: rcp.rn.f32 %f6, %f5;
// CHECK-NEXT: ex2.approx.f32 %f7, %f4;
// CHECK-NEXT: lg2.approx.ftz.f32 %f8, %f7;
// CHECK-NEXT: fma.rn.f32 %f9, %f1, %f2, %f8;
// CHECK-NEXT: div.rn.f32 %f10, %f9, %f6;
// CHECK-NEXT: sqrt.rn.f64 %fd2, %fd1;
// CHECK-NEXT: rcp.rn.f64 %fd3, %fd2;
// CHECK-NEXT: div.rn.f64 %fd4, %fd2, %fd1;
// CHECK-NEXT: fma.rn.f64 %fd5, %fd4, %fd1, %fd3;
// CHECK-NEXT: abs.f64 %fd6, %fd5;
// CHECK-NEXT: mov.u32 %r1, 7;
// CHECK-NEXT: neg.s32 %r2, %r1;
// CHECK-NEXT: abs.s64 %rd{{[0-9]+}}, %rd{{[0-9]+}};
// CHECK-NEXT: setp.gt.f32 %p1, %f1, %f2;
// CHECK-NEXT: setp.nan.f32 %p2, %f1, %f2;
// CHECK-NEXT: setp.equ.f64 %p3, %fd6, %fd1;
// CHECK-NEXT: or.pred %p4, %p1, %p2;
// CHECK-NEXT: not.pred %p5, %p4;
// CHECK-NEXT: and.pred %p6, %p5, %p3;
// CHECK-NEXT: xor.pred %p7, %p6, %p2;
// CHECK-NEXT: selp.f32 %f11, %f10, %f1, %p7;
// CHECK-NEXT: selp.f64 %fd7, %fd6, %fd1, %p7;
// CHECK-NEXT: selp.s64 %rd{{[0-9]+}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, %p7;
// SM90A: // assembled by ptxas (nvJitLink) for sm_90a:
// SM100A: // assembled by ptxas (nvJitLink) for sm_100a:
func.func @math(%X: memref<4xf32, #bulkred.scope<global>>, %D: memref<2xf64, #bulkred.scope<global>>, %I: memref<2xi64, #bulkred.scope<global>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.load %X[%c0] : memref<4xf32, #bulkred.scope<global>>
  %b = memref.load %X[%c1] : memref<4xf32, #bulkred.scope<global>>
  %d = memref.load %D[%c0] : memref<2xf64, #bulkred.scope<global>>
  %n = memref.load %I[%c0] : memref<2xi64, #bulkred.scope<global>>
  %abs = ptx.abs f32 %a : f32
  %neg = ptx.neg f32 %abs : f32
  %sq = ptx.sqrt rn f32 %abs : f32
  %r = ptx.rcp rn f32 %sq : f32
  %e = ptx.ex2 approx f32 %neg : f32
  %l = ptx.lg2 approx ftz f32 %e : f32
  %f = ptx.fma rn f32 %a, %b, %l : f32
  %q = ptx.div.float rn f32 %f, %r : f32
  %dd = ptx.sqrt rn f64 %d : f64
  %dr = ptx.rcp rn f64 %dd : f64
  %dq = ptx.div.float rn f64 %dd, %d : f64
  %df = ptx.fma rn f64 %dq, %d, %dr : f64
  %da = ptx.abs f64 %df : f64
  %i32 = ptx.mov.imm 7 : i32
  %ni = ptx.neg s32 %i32 : i32
  %an = ptx.abs s64 %n : i64
  %p1 = ptx.setp gt f32 %a, %b : f32, f32
  %p2 = ptx.setp nan f32 %a, %b : f32, f32
  %p3 = ptx.setp equ f64 %da, %d : f64, f64
  %p4 = ptx.or.pred %p1, %p2
  %p5 = ptx.not.pred %p4
  %p6 = ptx.and.pred %p5, %p3
  %p7 = ptx.xor.pred %p6, %p2
  %s = ptx.selp f32 %q, %a, %p7 : f32, f32 -> f32
  %sd = ptx.selp f64 %da, %d, %p7 : f64, f64 -> f64
  %si = ptx.selp s64 %an, %n, %p7 : i64, i64 -> i64
  memref.store %s, %X[%c0] : memref<4xf32, #bulkred.scope<global>>
  memref.store %sd, %D[%c1] : memref<2xf64, #bulkred.scope<global>>
  memref.store %si, %I[%c1] : memref<2xi64, #bulkred.scope<global>>
  func.return
}
