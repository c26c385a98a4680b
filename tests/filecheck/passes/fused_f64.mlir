// Fused reductions of float64 (passes/fused.py, docs/fused.md): exp and log have no
// float64 PTX instruction (ex2/lg2.approx are f32 only), so logsumexp and the pow maps
// of a p-norm use the routines of passes/f64_math.py (Emitter.exp_f64, log_f64,
// pow_f64): the `math` row accepts them, and the code is fma.rn.f64 chains, the mov.b64
// of a double's halves and the shifts of its exponent, log's div.rn.f64 and
// cvt.rn.f64.s32; no ex2/lg2. Both targets assemble (ptxas, nvJitLink).
// RUN: bulkred-opt %s --split-input-file --verify-each -p 'lower-tile-reductions{target=sm_90a explain=true},legalize-for-target{target=sm_90a},lower-bulk-ops,lower-to-ptx{target=sm_90a},check-target{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=EXPLAIN,PTX,SM90
// RUN: bulkred-opt %s --split-input-file -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=PTX,SM100

// logsumexp of each row: grid_rows; per element two exps (the rescaled sum and the
// new term): clamp by setp/selp, k = rint(x log2 e) by the 1.5 * 2^52 shifter (its low
// word), t = x - k ln2 in two fmas, the degree-12 polynomial, 2^k in two steps built
// from the exponent bits; per result one log.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}fused_f64.mlir:[[# @LINE + 28]]:3 on sm_90a
// EXPLAIN:    grid_rows{{ +}}65{{ +}}math{{ +}}ok{{ +}}exp/log: ex2/lg2.approx in f32, FMA routines in f64{{ +}}float64 math: logsumexp with FMA exp/log
// EXPLAIN:    // chosen: grid_rows
// PTX-LABEL:  .entry logsumexp_rows(
// PTX-NOT:    {{ex2|lg2}}
// PTX:        ld.global.nc.v2.f64
// PTX:        setp.gt.f64 [[ABOVE:%p[0-9]+]], [[X:%fd[0-9]+]], [[TOP:%fd[0-9]+]];
// PTX-NEXT:   selp.f64 {{%fd[0-9]+}}, [[TOP]], [[X]], [[ABOVE]];
// PTX:        mov.f64 [[SHIFTER:%fd[0-9]+]], 0d4338000000000000;
// PTX-NEXT:   mov.f64 [[LOG2E:%fd[0-9]+]], 0d3FF71547652B82FE;
// PTX-NEXT:   fma.rn.f64 [[K:%fd[0-9]+]], {{%fd[0-9]+}}, [[LOG2E]], [[SHIFTER]];
// PTX-NEXT:   mov.b64 {[[KLO:%r[0-9]+]], {{%r[0-9]+}}}, [[K]];
// PTX-NEXT:   sub.rn.f64 [[KF:%fd[0-9]+]], [[K]], [[SHIFTER]];
// PTX-NEXT:   mov.f64 {{%fd[0-9]+}}, 0dBFE62E42FEFA39EF;
// PTX-NEXT:   fma.rn.f64 {{%fd[0-9]+}}, [[KF]]
// PTX:        fma.rn.f64
// PTX:        shr.s32 [[HALF:%r[0-9]+]], [[KLO]], {{%r[0-9]+}};
// PTX:        shl.b32 [[HI:%r[0-9]+]]
// PTX-NEXT:   mov.b64 [[S1:%fd[0-9]+]], {{[{]%r[0-9]+}}, [[HI]]};
// PTX-NEXT:   mul.rn.f64 {{%fd[0-9]+}}, {{%fd[0-9]+}}, [[S1]];
// PTX:        div.rn.f64
// PTX:        cvt.rn.f64.s32
// PTX:        mov.f64 {{%fd[0-9]+}}, 0d3FE62E42FEE00000;
// PTX-NOT:    {{ex2|lg2}}
// PTX:        st.global.f64
// SM90:       // assembled by ptxas (nvJitLink) for sm_90a:
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @logsumexp_rows(%x: memref<64x1024xf64, #bulkred.scope<global>>, %y: memref<64xf64, #bulkred.scope<global>>) {
  bulkred.reduce logsumexp grid axes [1 : i64] %x, %y : memref<64x1024xf64, #bulkred.scope<global>>, memref<64xf64, #bulkred.scope<global>>
  func.return
}

// -----

// vector_norm(x, ord=3) of a whole float64 vector: grid_full; |x| ** 3 per element as
// exp(3 log|x|) (log's div.rn.f64, the exp chain), the sum, and ** (1/3) at the end.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}fused_f64.mlir:[[# @LINE + 15]]:3 on sm_90a
// EXPLAIN:    grid_full{{ +}}60{{ +}}math{{ +}}ok{{ +}}exp/log: ex2/lg2.approx in f32, FMA routines in f64{{ +}}float64 math: pow, pow with FMA exp/log
// EXPLAIN:    // chosen: grid_full
// PTX-LABEL:  .entry norm3_whole(
// PTX-NOT:    {{ex2|lg2}}
// PTX:        abs.f64
// PTX:        div.rn.f64
// PTX:        cvt.rn.f64.s32
// PTX:        mov.f64 {{%fd[0-9]+}}, 0d4338000000000000;
// PTX:        mul.rn.f64
// PTX:        add.rn.f64
// PTX-NOT:    {{ex2|lg2}}
// SM90:       // assembled by ptxas (nvJitLink) for sm_90a:
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @norm3_whole(%x: memref<1048576xf64, #bulkred.scope<global>>, %y: memref<1xf64, #bulkred.scope<global>>) {
  bulkred.reduce sum grid prologue [#bulkred.map<pow 3.0>] epilogue [#bulkred.map<pow 0.3333333333333333>] %x, %y : memref<1048576xf64, #bulkred.scope<global>>, memref<1xf64, #bulkred.scope<global>>
  func.return
}
