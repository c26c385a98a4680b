// Custom and generic syntax of the math ops of fused reductions in arith.py: abs, neg,
// sqrt, rcp, ex2, lg2, div.float, fma over their '.type' x rounding x '.ftz' forms, and
// and/or/xor/not .pred; the PTX line of each; the target each needs.
// RUN: bulkred-opt %s --split-input-file | filecheck %s
// RUN: bulkred-opt %s --split-input-file --print-op-generic | bulkred-opt --split-input-file | filecheck %s
// RUN: bulkred-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: bulkred-opt %s --split-input-file -p 'check-target{target=sm_90a}' | filecheck %s
// RUN: bulkred-opt %s --split-input-file -p 'check-target{target=sm_100a}' | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -p 'check-target{target=sm_80}' 2>&1 >/dev/null | filecheck %s --check-prefix=SM80
// RUN: bulkred-opt %s --split-input-file -t ptx | filecheck %s --check-prefix=PTX

// Errors of these ops are in ptx_math_invalid.mlir.

// CHECK-LABEL: func.func @abs_neg
// GENERIC-LABEL: sym_name = "abs_neg"
// PTX-LABEL: .entry abs_neg(
func.func @abs_neg(%s16: i16, %s32: i32, %s64: i64, %h: f16, %bh: bf16, %f: f32, %d: f64) {
  // CHECK: %{{.*}} = ptx.abs s16 %{{.*}} : i16
  // GENERIC: "ptx.abs"(%{{.*}}) <{type = #ptx<arith_type s16>}> : (i16) -> i16
  // PTX: abs.s16 %rs{{[0-9]+}}, %rs{{[0-9]+}};
  %0 = ptx.abs s16 %s16 : i16
  // CHECK: ptx.abs s32 %{{.*}} : i32
  // PTX: abs.s32 %r{{[0-9]+}}, %r{{[0-9]+}};
  %1 = ptx.abs s32 %s32 : i32
  // CHECK: ptx.abs s64 %{{.*}} : i64
  // PTX: abs.s64 %rd{{[0-9]+}}, %rd{{[0-9]+}};
  %2 = ptx.abs s64 %s64 : i64
  // CHECK: ptx.abs ftz f32 %{{.*}} : f32
  // GENERIC: "ptx.abs"(%{{.*}}) <{ftz, type = #ptx<arith_type f32>}> : (f32) -> f32
  // PTX: abs.ftz.f32 %f{{[0-9]+}}, %f{{[0-9]+}};
  %3 = ptx.abs ftz f32 %f : f32
  // CHECK: ptx.abs f64 %{{.*}} : f64
  // PTX: abs.f64 %fd{{[0-9]+}}, %fd{{[0-9]+}};
  %4 = ptx.abs f64 %d : f64
  // CHECK: ptx.abs ftz f16 %{{.*}} : f16
  // PTX: abs.ftz.f16 %h{{[0-9]+}}, %h{{[0-9]+}};
  %5 = ptx.abs ftz f16 %h : f16
  // CHECK: ptx.abs bf16 %{{.*}} : bf16
  // PTX: abs.bf16 %h{{[0-9]+}}, %h{{[0-9]+}};
  %6 = ptx.abs bf16 %bh : bf16
  // CHECK: ptx.neg s32 %{{.*}} : i32
  // PTX: neg.s32 %r{{[0-9]+}}, %r{{[0-9]+}};
  %7 = ptx.neg s32 %s32 : i32
  // CHECK: ptx.neg s64 %{{.*}} : i64
  %8 = ptx.neg s64 %s64 : i64
  // CHECK: ptx.neg ftz f32 %{{.*}} : f32
  // PTX: neg.ftz.f32 %f{{[0-9]+}}, %f{{[0-9]+}};
  %9 = ptx.neg ftz f32 %f : f32
  // CHECK: ptx.neg f64 %{{.*}} {tag = "kept"} : f64
  // GENERIC: "ptx.neg"(%{{.*}}) <{type = #ptx<arith_type f64>}> {tag = "kept"} : (f64) -> f64
  // PTX: neg.f64 %fd{{[0-9]+}}, %fd{{[0-9]+}};
  %10 = ptx.neg f64 %d {tag = "kept"} : f64
  // CHECK: ptx.neg bf16 %{{.*}} : bf16
  // PTX: neg.bf16 %h{{[0-9]+}}, %h{{[0-9]+}};
  %11 = ptx.neg bf16 %bh : bf16
  func.return
}

// -----

// CHECK-LABEL: func.func @sqrt_rcp
// GENERIC-LABEL: sym_name = "sqrt_rcp"
// PTX-LABEL: .entry sqrt_rcp(
func.func @sqrt_rcp(%f: f32, %d: f64) {
  // CHECK: ptx.sqrt rn f32 %{{.*}} : f32
  // GENERIC: "ptx.sqrt"(%{{.*}}) <{rnd = #ptx<rnd rn>, type = #ptx<arith_type f32>}> : (f32) -> f32
  // PTX: sqrt.rn.f32 %f{{[0-9]+}}, %f{{[0-9]+}};
  %0 = ptx.sqrt rn f32 %f : f32
  // The qualifiers print in PTX order whatever order they are written in.
  // CHECK: ptx.sqrt approx ftz f32 %{{.*}} : f32
  // GENERIC: "ptx.sqrt"(%{{.*}}) <{ftz, approx, type = #ptx<arith_type f32>}> : (f32) -> f32
  // PTX: sqrt.approx.ftz.f32 %f{{[0-9]+}}, %f{{[0-9]+}};
  %1 = ptx.sqrt ftz approx f32 %f : f32
  // CHECK: ptx.sqrt rz ftz f32
  // PTX: sqrt.rz.ftz.f32
  %2 = ptx.sqrt rz ftz f32 %f : f32
  // CHECK: ptx.sqrt rn f64 %{{.*}} : f64
  // PTX: sqrt.rn.f64 %fd{{[0-9]+}}, %fd{{[0-9]+}};
  %3 = ptx.sqrt rn f64 %d : f64
  // CHECK: ptx.sqrt rp f64
  %4 = ptx.sqrt rp f64 %d : f64
  // CHECK: ptx.rcp rn f32 %{{.*}} : f32
  // PTX: rcp.rn.f32 %f{{[0-9]+}}, %f{{[0-9]+}};
  %5 = ptx.rcp rn f32 %f : f32
  // CHECK: ptx.rcp approx ftz f32
  // PTX: rcp.approx.ftz.f32
  %6 = ptx.rcp approx ftz f32 %f : f32
  // CHECK: ptx.rcp rn f64 %{{.*}} : f64
  // PTX: rcp.rn.f64 %fd{{[0-9]+}}, %fd{{[0-9]+}};
  %7 = ptx.rcp rn f64 %d : f64
  // rcp.approx.f64 exists only with '.ftz'.
  // CHECK: ptx.rcp approx ftz f64 %{{.*}} : f64
  // PTX: rcp.approx.ftz.f64 %fd{{[0-9]+}}, %fd{{[0-9]+}};
  %8 = ptx.rcp approx ftz f64 %d : f64
  func.return
}

// -----

// CHECK-LABEL: func.func @ex2_lg2
// PTX-LABEL: .entry ex2_lg2(
// SM80: ptx_math.mlir:[[# @LINE + 14]]:3: error: 'ptx.ex2' 'ex2.approx.ftz.bf16' needs sm_90 and PTX ISA 7.8, but the target is sm_80
func.func @ex2_lg2(%h: f16, %bh: bf16, %f: f32) {
  // CHECK: ptx.ex2 approx f32 %{{.*}} : f32
  // GENERIC: "ptx.ex2"(%{{.*}}) <{approx, type = #ptx<arith_type f32>}> : (f32) -> f32
  // PTX: ex2.approx.f32 %f{{[0-9]+}}, %f{{[0-9]+}};
  %0 = ptx.ex2 approx f32 %f : f32
  // CHECK: ptx.ex2 approx ftz f32
  %1 = ptx.ex2 approx ftz f32 %f : f32
  // ex2.approx.f16 needs sm_75; ex2.approx.ftz.bf16 (.ftz required) sm_90.
  // CHECK: ptx.ex2 approx f16 %{{.*}} : f16
  // PTX: ex2.approx.f16 %h{{[0-9]+}}, %h{{[0-9]+}};
  %2 = ptx.ex2 approx f16 %h : f16
  // CHECK: ptx.ex2 approx ftz bf16 %{{.*}} : bf16
  // PTX: ex2.approx.ftz.bf16 %h{{[0-9]+}}, %h{{[0-9]+}};
  %3 = ptx.ex2 approx ftz bf16 %bh : bf16
  // CHECK: ptx.lg2 approx f32 %{{.*}} : f32
  // PTX: lg2.approx.f32 %f{{[0-9]+}}, %f{{[0-9]+}};
  %4 = ptx.lg2 approx f32 %f : f32
  // CHECK: ptx.lg2 approx ftz f32
  // PTX: lg2.approx.ftz.f32
  %5 = ptx.lg2 approx ftz f32 %f : f32
  func.return
}

// -----

// CHECK-LABEL: func.func @div_fma
// GENERIC-LABEL: sym_name = "div_fma"
// PTX-LABEL: .entry div_fma(
func.func @div_fma(%h: f16, %bh: bf16, %f: f32, %d: f64) {
  // CHECK: ptx.div.float rn f32 %{{.*}}, %{{.*}} : f32
  // GENERIC: "ptx.div.float"(%{{.*}}, %{{.*}}) <{rnd = #ptx<rnd rn>, type = #ptx<arith_type f32>}> : (f32, f32) -> f32
  // PTX: div.rn.f32 %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}};
  %0 = ptx.div.float rn f32 %f, %f : f32
  // CHECK: ptx.div.float full ftz f32
  // GENERIC: "ptx.div.float"(%{{.*}}, %{{.*}}) <{full, ftz, type = #ptx<arith_type f32>}> : (f32, f32) -> f32
  // PTX: div.full.ftz.f32
  %1 = ptx.div.float full ftz f32 %f, %f : f32
  // CHECK: ptx.div.float approx f32
  // PTX: div.approx.f32
  %2 = ptx.div.float approx f32 %f, %f : f32
  // CHECK: ptx.div.float rn f64 %{{.*}}, %{{.*}} : f64
  // PTX: div.rn.f64 %fd{{[0-9]+}}, %fd{{[0-9]+}}, %fd{{[0-9]+}};
  %3 = ptx.div.float rn f64 %d, %d : f64
  // CHECK: ptx.fma rn f32 %{{.*}}, %{{.*}}, %{{.*}} : f32
  // GENERIC: "ptx.fma"(%{{.*}}, %{{.*}}, %{{.*}}) <{rnd = #ptx<rnd rn>, type = #ptx<arith_type f32>}> : (f32, f32, f32) -> f32
  // PTX: fma.rn.f32 %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}};
  %4 = ptx.fma rn f32 %f, %f, %f : f32
  // CHECK: ptx.fma rm ftz f32
  // PTX: fma.rm.ftz.f32
  %5 = ptx.fma rm ftz f32 %f, %f, %f : f32
  // CHECK: ptx.fma rn f64 %{{.*}}, %{{.*}}, %{{.*}} : f64
  // PTX: fma.rn.f64 %fd{{[0-9]+}}, %fd{{[0-9]+}}, %fd{{[0-9]+}}, %fd{{[0-9]+}};
  %6 = ptx.fma rn f64 %d, %d, %d : f64
  // CHECK: ptx.fma rn ftz f16 %{{.*}}, %{{.*}}, %{{.*}} : f16
  // PTX: fma.rn.ftz.f16 %h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}};
  %7 = ptx.fma rn ftz f16 %h, %h, %h : f16
  // CHECK: ptx.fma rn bf16 %{{.*}}, %{{.*}}, %{{.*}} : bf16
  // PTX: fma.rn.bf16 %h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}}, %h{{[0-9]+}};
  %8 = ptx.fma rn bf16 %bh, %bh, %bh : bf16
  func.return
}

// -----

// CHECK-LABEL: func.func @pred_logic
// GENERIC-LABEL: sym_name = "pred_logic"
// PTX-LABEL: .entry pred_logic(
func.func @pred_logic(%x: f32, %y: f32) {
  // PTX: setp.lt.f32 %p1, %f1, %f2;
  // PTX-NEXT: setp.nan.f32 %p2, %f1, %f2;
  %a = ptx.setp lt f32 %x, %y : f32, f32
  %b = ptx.setp nan f32 %x, %y : f32, f32
  // CHECK: %{{.*}} = ptx.and.pred %{{.*}}, %{{.*}}
  // GENERIC: "ptx.and.pred"(%{{.*}}, %{{.*}}) : (i1, i1) -> i1
  // PTX-NEXT: and.pred %p3, %p1, %p2;
  %0 = ptx.and.pred %a, %b
  // CHECK: ptx.or.pred %{{.*}}, %{{.*}}
  // PTX-NEXT: or.pred %p4, %p3, %p2;
  %1 = ptx.or.pred %0, %b
  // CHECK: ptx.xor.pred %{{.*}}, %{{.*}}
  // PTX-NEXT: xor.pred %p5, %p4, %p1;
  %2 = ptx.xor.pred %1, %a
  // CHECK: ptx.not.pred %{{.*}}
  // GENERIC: "ptx.not.pred"(%{{.*}}) : (i1) -> i1
  // PTX-NEXT: not.pred %p6, %p5;
  %3 = ptx.not.pred %2
  func.return
}
