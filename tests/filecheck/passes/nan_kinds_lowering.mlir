// The NaN-aware reductions through the dispatch and the backend (passes/fused.py,
// docs/fused.md): nansum (sum with the prologue map nan_zero: setp.num, selp of 0),
// nanmean (the kind nanmean: a float sum and an integer count of the non-NaN elements,
// cvt and div.rn at the end) and aminmax (the kind minmax: a min and a max register,
// .NaN propagating; dst the minimum, aux the maximum). Each canonical form picks the
// variant a plain reduction of its shape picks (whole -> grid_full, inner -> grid_rows,
// outer -> grid_split_det, middle -> grid_middle, general -> grid_runs or
// grid_gather); the variants whose instruction combines the data itself decline them
// in their `fused` row. Every case assembles for sm_90a and sm_100a.
// RUN: bulkred-opt %s --split-input-file --verify-each -p 'lower-tile-reductions{target=sm_90a explain=true},legalize-for-target{target=sm_90a},lower-bulk-ops,lower-to-ptx{target=sm_90a},check-target{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=EXPLAIN,PTX
// RUN: bulkred-opt %s --split-input-file -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=SM100

// nansum of a whole vector: grid_full; each element is setp.num, selp of 0, add.rn;
// the bulk and cluster variants decline the map.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}nan_kinds_lowering.mlir:[[# @LINE + 14]]:3 on sm_90a
// EXPLAIN:    grid_split_bulk{{ +}}64{{ +}}fused{{ +}}FAIL{{ +}}a plain kind, no prologue or epilogue{{ +}}maps nan_zero (cp.reduce.async.bulk applies no elementwise map)
// EXPLAIN:    grid_full_cluster{{ +}}61{{ +}}fused{{ +}}FAIL{{ +}}a plain kind, no prologue or epilogue{{ +}}maps nan_zero (red.async applies no elementwise map)
// EXPLAIN:    // chosen: grid_full
// PTX-LABEL:  .entry nansum_whole(
// PTX:        setp.num.f32 [[NUM:%p[0-9]+]], [[E:%f[0-9]+]], [[E]];
// PTX-NEXT:   mov.f32 [[ZERO:%f[0-9]+]], 0f00000000;
// PTX-NEXT:   selp.f32 [[V:%f[0-9]+]], [[E]], [[ZERO]], [[NUM]];
// PTX-NEXT:   add.rn.f32 {{%f[0-9]+}}, {{%f[0-9]+}}, [[V]];
// PTX:        // assembled by ptxas (nvJitLink) for sm_90a:
// SM100-LABEL: .entry nansum_whole(
// SM100:      setp.num.f32
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @nansum_whole(%x: memref<1048576xf32, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid prologue [#bulkred.map<nan_zero>] %x, %y : memref<1048576xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// nansum of each row of bfloat16 into float32: grid_rows; NaN is tested after the
// conversion to the accumulator type.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}nan_kinds_lowering.mlir:[[# @LINE + 11]]:3 on sm_90a
// EXPLAIN:    grid_split_bulk{{ +}}64{{ +}}fused{{ +}}FAIL{{ +}}a plain kind, no prologue or epilogue{{ +}}maps cast, nan_zero (cp.reduce.async.bulk applies no elementwise map)
// EXPLAIN:    // chosen: grid_rows
// PTX-LABEL:  .entry nansum_rows(
// PTX:        cvt.f32.bf16 [[E:%f[0-9]+]], {{%h[0-9]+}};
// PTX:        setp.num.f32 {{%p[0-9]+}}, [[E]], [[E]];
// PTX:        st.global.f32
// SM100-LABEL: .entry nansum_rows(
// SM100:      setp.num.f32
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @nansum_rows(%x: memref<256x1000xbf16, #bulkred.scope<global>>, %y: memref<256xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<cast>, #bulkred.map<nan_zero>] %x, %y : memref<256x1000xbf16, #bulkred.scope<global>>, memref<256xf32, #bulkred.scope<global>>
  func.return
}

// -----

// nanmean of each column (outer): a plain column sum would take grid_split_bulk; its
// `kind` and `fused` rows decline nanmean, and grid_split_det lowers it. Each element
// adds itself or 0 to the sum and 1 or 0 to the s32 count; the result is
// sum / cvt.rn.f32.s32(count) (0 / 0: NaN where a column is all NaN).
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}nan_kinds_lowering.mlir:[[# @LINE + 20]]:3 on sm_90a
// EXPLAIN:    grid_split_bulk{{ +}}64{{ +}}kind{{ +}}FAIL{{ +}}sum{{ +}}nanmean
// EXPLAIN:    grid_split_bulk{{ +}}64{{ +}}fused{{ +}}FAIL{{ +}}a plain kind, no prologue or epilogue{{ +}}kind nanmean (cp.reduce.async.bulk has no nanmean)
// EXPLAIN:    grid_full_cluster{{ +}}61{{ +}}fused{{ +}}FAIL{{ +}}a plain kind, no prologue or epilogue{{ +}}kind nanmean (red.async has no nanmean)
// EXPLAIN:    grid_split_det{{ +}}priority 62: chosen
// EXPLAIN:    // chosen: grid_split_det
// PTX-LABEL:  .entry nanmean_columns(
// PTX-NOT:    cp.reduce.async.bulk
// PTX:        setp.num.f32 [[NUM:%p[0-9]+]], [[E:%f[0-9]+]], [[E]];
// PTX:        selp.s32 [[ONE:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}}, [[NUM]];
// PTX:        selp.f32 [[V:%f[0-9]+]], [[E]], {{%f[0-9]+}}, [[NUM]];
// PTX-NEXT:   add.rn.f32 {{%f[0-9]+}}, {{%f[0-9]+}}, [[V]];
// PTX-NEXT:   add.s32 {{%r[0-9]+}}, {{%r[0-9]+}}, [[ONE]];
// PTX:        cvt.rn.f32.s32 [[N:%f[0-9]+]], {{%r[0-9]+}};
// PTX-NEXT:   div.rn.f32 {{%f[0-9]+}}, {{%f[0-9]+}}, [[N]];
// PTX:        // assembled by ptxas (nvJitLink) for sm_90a:
// SM100-LABEL: .entry nanmean_columns(
// SM100:      cvt.rn.f32.s32
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @nanmean_columns(%x: memref<4096x1024xf32, #bulkred.scope<global>>, %y: memref<1024xf32, #bulkred.scope<global>>) {
  bulkred.reduce nanmean grid axes [0 : i64] %x, %y : memref<4096x1024xf32, #bulkred.scope<global>>, memref<1024xf32, #bulkred.scope<global>>
  func.return
}

// -----

// nanmean of float64 over the middle axis: grid_middle; a partial state is the f64 sum
// and the b32 count (one 16-byte workspace slot); cvt.rn.f64.s32 and div.rn.f64.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}nan_kinds_lowering.mlir:[[# @LINE + 13]]:3 on sm_90a
// EXPLAIN:    grid_middle{{ +}}63{{ +}}form{{ +}}ok{{ +}}middle{{ +}}middle [64, 1000, 256]
// EXPLAIN:    grid_middle{{ +}}63{{ +}}math{{ +}}ok{{ +}}exp/log: ex2/lg2.approx in f32, FMA routines in f64{{ +}}float64 math
// EXPLAIN:    // chosen: grid_middle
// PTX-LABEL:  .entry nanmean_middle(
// PTX:        setp.num.f64
// PTX:        st.global.f64 [[[SLOT:%rd[0-9]+]]], {{%fd[0-9]+}};
// PTX-NEXT:   st.global.b32 [[[SLOT]]+8], {{%r[0-9]+}};
// PTX:        cvt.rn.f64.s32 [[N:%fd[0-9]+]], {{%r[0-9]+}};
// PTX-NEXT:   div.rn.f64 {{%fd[0-9]+}}, {{%fd[0-9]+}}, [[N]];
// SM100-LABEL: .entry nanmean_middle(
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @nanmean_middle(%x: memref<64x1000x256xf64, #bulkred.scope<global>>, %y: memref<64x256xf64, #bulkred.scope<global>>) {
  bulkred.reduce nanmean grid axes [1 : i64] %x, %y : memref<64x1000x256xf64, #bulkred.scope<global>>, memref<64x256xf64, #bulkred.scope<global>>
  func.return
}

// -----

// nanmean through grid_gather (forced here; the variant of a view off its vector
// alignment): scalar loads, the same state.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}nan_kinds_lowering.mlir:[[# @LINE + 10]]:3 on sm_90a
// EXPLAIN:    grid_gather{{ +}}priority 59: chosen (forced by 'variant')
// EXPLAIN:    // chosen: grid_gather
// PTX-LABEL:  .entry nanmean_gather(
// PTX:        ld.global.f32
// PTX:        setp.num.f32
// PTX:        cvt.rn.f32.s32
// SM100-LABEL: .entry nanmean_gather(
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @nanmean_gather(%x: memref<64x100xf32, #bulkred.scope<global>>, %y: memref<64xf32, #bulkred.scope<global>>) {
  bulkred.reduce nanmean grid axes [1 : i64] variant "grid_gather" %x, %y : memref<64x100xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// aminmax of each row: grid_rows; min.NaN and max.NaN of each element; the two
// registers go through the warp as a state (shfl.sync of each), never redux.sync (which
// has one result), also on sm_100a; the minimum into dst, the maximum into aux.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}nan_kinds_lowering.mlir:[[# @LINE + 17]]:3 on sm_90a
// EXPLAIN:    grid_split_bulk{{ +}}64{{ +}}fused{{ +}}FAIL{{ +}}a plain kind, no prologue or epilogue{{ +}}kind minmax (cp.reduce.async.bulk has no minmax)
// EXPLAIN:    grid_full_cluster{{ +}}61{{ +}}kind{{ +}}FAIL{{ +}}sum, max, min, and, or, xor (red.async has no mul){{ +}}minmax
// EXPLAIN:    // chosen: grid_rows
// PTX-LABEL:  .entry minmax_rows(
// PTX:        min.NaN.f32 {{%f[0-9]+}}, {{%f[0-9]+}}, [[E:%f[0-9]+]];
// PTX-NEXT:   max.NaN.f32 {{%f[0-9]+}}, {{%f[0-9]+}}, [[E]];
// PTX:        shfl.sync.bfly.b32
// PTX:        st.global.f32
// PTX:        st.global.f32
// PTX:        // assembled by ptxas (nvJitLink) for sm_90a:
// SM100-LABEL: .entry minmax_rows(
// SM100:      min.NaN.f32
// SM100:      max.NaN.f32
// SM100-NOT:  redux.sync
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @minmax_rows(%x: memref<256x1024xf32, #bulkred.scope<global>>, %lo: memref<256xf32, #bulkred.scope<global>>, %hi: memref<256xf32, #bulkred.scope<global>>) {
  bulkred.reduce minmax grid axes [1 : i64] %x, %lo aux %hi : memref<256xf32, #bulkred.scope<global>> : memref<256x1024xf32, #bulkred.scope<global>>, memref<256xf32, #bulkred.scope<global>>
  func.return
}

// -----

// aminmax of a whole float64 vector: grid_full; max.f64 has no .NaN, so each step is
// the plain min/max, setp.nan and a selp of add.rn (a NaN), as for max of f64; a
// workspace slot holds both registers.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}nan_kinds_lowering.mlir:[[# @LINE + 13]]:3 on sm_90a
// EXPLAIN:    // chosen: grid_full
// PTX-LABEL:  .entry minmax_whole(
// PTX:        min.f64 [[M:%fd[0-9]+]], [[A:%fd[0-9]+]], [[B:%fd[0-9]+]];
// PTX-NEXT:   setp.nan.f64 [[P:%p[0-9]+]], [[A]], [[B]];
// PTX-NEXT:   add.rn.f64 [[S:%fd[0-9]+]], [[A]], [[B]];
// PTX-NEXT:   selp.f64 {{%fd[0-9]+}}, [[S]], [[M]], [[P]];
// PTX-NEXT:   max.f64
// PTX:        st.global.f64 [[[SLOT:%rd[0-9]+]]], {{%fd[0-9]+}};
// PTX-NEXT:   st.global.f64 [[[SLOT]]+8], {{%fd[0-9]+}};
// SM100-LABEL: .entry minmax_whole(
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @minmax_whole(%x: memref<1048576xf64, #bulkred.scope<global>>, %lo: memref<1xf64, #bulkred.scope<global>>, %hi: memref<1xf64, #bulkred.scope<global>>) {
  bulkred.reduce minmax grid %x, %lo aux %hi : memref<1xf64, #bulkred.scope<global>> : memref<1048576xf64, #bulkred.scope<global>>, memref<1xf64, #bulkred.scope<global>>
  func.return
}

// -----

// aminmax of int32 over axes 0 and 2 (general): grid_runs; min.s32 and max.s32.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}nan_kinds_lowering.mlir:[[# @LINE + 9]]:3 on sm_90a
// EXPLAIN:    grid_runs{{ +}}66{{ +}}form{{ +}}ok{{ +}}general, strided{{ +}}general [30, 40, 50]
// EXPLAIN:    // chosen: grid_runs
// PTX-LABEL:  .entry minmax_general(
// PTX:        min.s32 {{%r[0-9]+}}, {{%r[0-9]+}}, [[E:%r[0-9]+]];
// PTX-NEXT:   max.s32 {{%r[0-9]+}}, {{%r[0-9]+}}, [[E]];
// SM100-LABEL: .entry minmax_general(
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @minmax_general(%x: memref<30x40x50xi32, #bulkred.scope<global>>, %lo: memref<40xi32, #bulkred.scope<global>>, %hi: memref<40xi32, #bulkred.scope<global>>) {
  bulkred.reduce minmax grid axes [0 : i64, 2 : i64] %x, %lo aux %hi : memref<40xi32, #bulkred.scope<global>> : memref<30x40x50xi32, #bulkred.scope<global>>, memref<40xi32, #bulkred.scope<global>>
  func.return
}

// -----

// aminmax of a float16 view read in place (strided, not a run): grid_gather; f16 is
// compared in f32 and both results rounded back (exactly) to f16.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}nan_kinds_lowering.mlir:[[# @LINE + 14]]:3 on sm_90a
// EXPLAIN:    grid_runs{{ +}}priority 66: rejected: runs
// EXPLAIN:    grid_gather{{ +}}priority 59: chosen
// PTX-LABEL:  .entry minmax_view(
// PTX:        cvt.f32.f16 [[E:%f[0-9]+]], {{%h[0-9]+}};
// PTX-NEXT:   min.NaN.f32 {{%f[0-9]+}}, {{%f[0-9]+}}, [[E]];
// PTX-NEXT:   max.NaN.f32 {{%f[0-9]+}}, {{%f[0-9]+}}, [[E]];
// PTX:        cvt.rn.f16.f32
// PTX:        st.global.b16
// PTX:        cvt.rn.f16.f32
// PTX:        st.global.b16
// SM100-LABEL: .entry minmax_view(
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @minmax_view(%x: memref<7x9x11xf16, strided<[1, 7, 63]>, #bulkred.scope<global>>, %lo: memref<7x11xf16, #bulkred.scope<global>>, %hi: memref<7x11xf16, #bulkred.scope<global>>) {
  bulkred.reduce minmax grid axes [1 : i64] %x, %lo aux %hi : memref<7x11xf16, #bulkred.scope<global>> : memref<7x9x11xf16, strided<[1, 7, 63]>, #bulkred.scope<global>>, memref<7x11xf16, #bulkred.scope<global>>
  func.return
}
