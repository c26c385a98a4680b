// Fused reductions through the dispatch and the backend (passes/fused.py, docs/fused.md):
// each canonical form picks the same variant as a plain reduction of its shape (whole ->
// grid_full, inner -> grid_rows, outer -> grid_split_det, middle -> grid_middle, general
// -> grid_gather); the variants whose instruction combines the data itself decline a
// fused one in their `fused` row (cp.reduce.async.bulk, red.async), and the `math` row
// names the exp/log of the accumulator type (float64: fused_f64.mlir). In the generated
// code: the absmax's redux.sync.max.abs.NaN.f32 on sm_100a, argmax's setp/selp,
// logsumexp's ex2/lg2.
// RUN: bulkred-opt %s --split-input-file --verify-each -p 'lower-tile-reductions{target=sm_90a explain=true},legalize-for-target{target=sm_90a},lower-bulk-ops,lower-to-ptx{target=sm_90a},check-target{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=EXPLAIN,PTX
// RUN: bulkred-opt %s --split-input-file -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=SM100

// The examples of fused reductions (examples/fused_norm.mlir, argmax_rows.mlir,
// var_mean.mlir) choose what their header says, lower and assemble for both targets.
// RUN: bulkred-opt %S/../../../examples/fused_norm.mlir --verify-each -p 'lower-tile-reductions{target=sm_90a explain=true},legalize-for-target{target=sm_90a},lower-bulk-ops,lower-to-ptx{target=sm_90a},check-target{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=EX-NORM,EX-PTX
// RUN: bulkred-opt %S/../../../examples/fused_norm.mlir -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=EX-PTX
// RUN: bulkred-opt %S/../../../examples/argmax_rows.mlir --verify-each -p 'lower-tile-reductions{target=sm_90a explain=true},legalize-for-target{target=sm_90a},lower-bulk-ops,lower-to-ptx{target=sm_90a},check-target{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=EX-ARGMAX,EX-PTX
// RUN: bulkred-opt %S/../../../examples/argmax_rows.mlir -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=EX-PTX
// RUN: bulkred-opt %S/../../../examples/var_mean.mlir --verify-each -p 'lower-tile-reductions{target=sm_90a explain=true},legalize-for-target{target=sm_90a},lower-bulk-ops,lower-to-ptx{target=sm_90a},check-target{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=EX-VAR,EX-PTX
// RUN: bulkred-opt %S/../../../examples/var_mean.mlir -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=EX-PTX
// EX-NORM:   // chosen: grid_rows
// EX-ARGMAX: // chosen: grid_rows
// EX-VAR:    // chosen: grid_split_det
// EX-PTX:    .visible .entry
// EX-PTX:    // assembled by ptxas (nvJitLink) for sm_{{90a|100a}}:

// The L2 norm of a whole vector: grid_full, the square a mul.rn in the streaming loop,
// the sqrt once at the end; the bulk and cluster variants decline the maps.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}fused_lowering.mlir:[[# @LINE + 10]]:3 on sm_90a
// EXPLAIN:    grid_split_bulk{{ +}}64{{ +}}fused{{ +}}FAIL{{ +}}a plain kind, no prologue or epilogue{{ +}}maps square, sqrt (cp.reduce.async.bulk applies no elementwise map)
// EXPLAIN:    grid_full_cluster{{ +}}61{{ +}}fused{{ +}}FAIL{{ +}}a plain kind, no prologue or epilogue{{ +}}maps square, sqrt (red.async applies no elementwise map)
// EXPLAIN:    grid_full{{ +}}60{{ +}}math{{ +}}ok{{ +}}exp/log: ex2/lg2.approx in f32, FMA routines in f64{{ +}}f32 math
// EXPLAIN:    // chosen: grid_full
// PTX-LABEL:  .entry norm_whole(
// PTX:        mul.rn.f32 [[SQ:%f[0-9]+]], [[E:%f[0-9]+]], [[E]];
// PTX:        sqrt.rn.f32
// PTX:        // assembled by ptxas (nvJitLink) for sm_90a:
func.func @norm_whole(%x: memref<1048576xf32, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid prologue [#bulkred.map<square>] epilogue [#bulkred.map<sqrt>] %x, %y : memref<1048576xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The absmax of a whole vector: grid_full; on sm_100a its warp step is redux.sync's
// .abs form (NaN propagating), on sm_90a abs.f32 then a max.NaN.f32 butterfly.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}fused_lowering.mlir:[[# @LINE + 12]]:3 on sm_90a
// EXPLAIN:    grid_split_bulk{{ +}}64{{ +}}fused{{ +}}FAIL{{ +}}a plain kind, no prologue or epilogue{{ +}}maps abs (cp.reduce.async.bulk applies no elementwise map)
// EXPLAIN:    // chosen: grid_full
// PTX-LABEL:  .entry absmax_whole(
// PTX:        abs.f32
// PTX-NOT:    redux.sync
// PTX:        max.NaN.f32
// PTX:        // assembled by ptxas (nvJitLink) for sm_90a:
// SM100-LABEL: .entry absmax_whole(
// SM100:      redux.sync.max.abs.NaN.f32
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @absmax_whole(%x: memref<1048576xf32, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce max grid prologue [#bulkred.map<abs>] %x, %y : memref<1048576xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// var_mean of each row (inner): grid_rows; Welford per element (rcp.approx of the
// count), Chan's combination of two states (div.rn).
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}fused_lowering.mlir:[[# @LINE + 9]]:3 on sm_90a
// EXPLAIN:    grid_rows{{ +}}65{{ +}}form{{ +}}ok{{ +}}inner{{ +}}inner [256, 1024]
// EXPLAIN:    grid_split_bulk{{ +}}64{{ +}}fused{{ +}}FAIL{{ +}}a plain kind, no prologue or epilogue{{ +}}kind var (cp.reduce.async.bulk has no var)
// EXPLAIN:    // chosen: grid_rows
// SM100-LABEL: .entry var_rows(
// SM100:      rcp.approx.f32
// SM100:      div.rn.f32
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @var_rows(%x: memref<256x1024xf32, #bulkred.scope<global>>, %v: memref<256xf32, #bulkred.scope<global>>, %m: memref<256xf32, #bulkred.scope<global>>) {
  bulkred.reduce var grid axes [1 : i64] correction 1 : i64 %x, %v aux %m : memref<256xf32, #bulkred.scope<global>> : memref<256x1024xf32, #bulkred.scope<global>>, memref<256xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The L1 norm of each column (outer): a plain column sum would take grid_split_bulk;
// with the abs prologue its `fused` row declines, and grid_split_det lowers it.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}fused_lowering.mlir:[[# @LINE + 11]]:3 on sm_90a
// EXPLAIN:    grid_split_bulk{{ +}}64{{ +}}form{{ +}}ok{{ +}}outer{{ +}}outer [4096, 1024]
// EXPLAIN:    grid_split_bulk{{ +}}64{{ +}}kind{{ +}}ok{{ +}}sum{{ +}}sum
// EXPLAIN:    grid_split_bulk{{ +}}64{{ +}}fused{{ +}}FAIL{{ +}}a plain kind, no prologue or epilogue{{ +}}maps abs (cp.reduce.async.bulk applies no elementwise map)
// EXPLAIN:    grid_split_bulk{{ +}}priority 64: rejected: fused
// EXPLAIN:    grid_split_det{{ +}}priority 62: chosen
// EXPLAIN:    // chosen: grid_split_det
// PTX-LABEL:  .entry l1_columns(
// PTX-NOT:    cp.reduce.async.bulk
// PTX:        abs.f32
func.func @l1_columns(%x: memref<4096x1024xf32, #bulkred.scope<global>>, %y: memref<1024xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [0 : i64] prologue [#bulkred.map<abs>] %x, %y : memref<4096x1024xf32, #bulkred.scope<global>>, memref<1024xf32, #bulkred.scope<global>>
  func.return
}

// -----

// argmax over the middle axis with its values (aux): grid_middle; the (value, index)
// state's step compares (setp .gtu, .num for NaN, .eq of the indices) and selects both
// registers (selp .f32 and the i32 index, the count being below 2^30).
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}fused_lowering.mlir:[[# @LINE + 11]]:3 on sm_90a
// EXPLAIN:    grid_split_bulk{{ +}}64{{ +}}fused{{ +}}FAIL{{ +}}a plain kind, no prologue or epilogue{{ +}}kind argmax (cp.reduce.async.bulk has no argmax)
// EXPLAIN:    grid_middle{{ +}}63{{ +}}form{{ +}}ok{{ +}}middle{{ +}}middle [64, 1000, 256]
// EXPLAIN:    // chosen: grid_middle
// SM100-LABEL: .entry argmax_middle(
// SM100:      setp.gtu.f32 [[GT:%p[0-9]+]], [[B:%f[0-9]+]], [[A:%f[0-9]+]];
// SM100-NEXT: setp.num.f32 {{%p[0-9]+}}, [[A]], [[A]];
// SM100:      selp.f32 {{%f[0-9]+}}, [[B]], [[A]], [[TAKE:%p[0-9]+]];
// SM100-NEXT: selp.s32 {{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, [[TAKE]];
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
func.func @argmax_middle(%x: memref<64x1000x256xf32, #bulkred.scope<global>>, %i: memref<64x256xi64, #bulkred.scope<global>>, %v: memref<64x256xf32, #bulkred.scope<global>>) {
  bulkred.reduce argmax grid axes [1 : i64] %x, %i aux %v : memref<64x256xf32, #bulkred.scope<global>> : memref<64x1000x256xf32, #bulkred.scope<global>>, memref<64x256xi64, #bulkred.scope<global>>
  func.return
}

// -----

// logsumexp over axes 0 and 2 (general): grid_runs (rows of 50 contiguous elements,
// vectors of 2); ex2.approx per element, one lg2.approx per result.
// EXPLAIN-LABEL: // dispatch of 'bulkred.reduce' at {{.*}}fused_lowering.mlir:[[# @LINE + 17]]:3 on sm_90a
// EXPLAIN:    grid_runs{{ +}}66{{ +}}form{{ +}}ok{{ +}}general, strided{{ +}}general [30, 40, 50]
// EXPLAIN:    grid_runs{{ +}}66{{ +}}math{{ +}}ok{{ +}}exp/log: ex2/lg2.approx in f32, FMA routines in f64{{ +}}f32 math
// EXPLAIN:    grid_runs{{ +}}66{{ +}}runs{{ +}}ok{{ +}}2 reduced axes, the innermost contiguous{{ +}}2 reduced axes, the innermost contiguous
// EXPLAIN:    grid_middle{{ +}}63{{ +}}form{{ +}}FAIL{{ +}}middle{{ +}}general [30, 40, 50]
// EXPLAIN:    grid_gather{{ +}}59{{ +}}math{{ +}}ok{{ +}}exp/log: ex2/lg2.approx in f32, FMA routines in f64{{ +}}f32 math
// EXPLAIN:    // chosen: grid_runs
// SM100-LABEL: .entry logsumexp_general(
// SM100:      ex2.approx.f32
// SM100:      lg2.approx.f32
// SM100:      st.global.f32
// SM100:      // assembled by ptxas (nvJitLink) for sm_100a:
// PTX-LABEL:  .entry logsumexp_general(
// PTX:        ld.global.nc.v2.f32
// PTX:        ex2.approx.f32
// PTX:        lg2.approx.f32
func.func @logsumexp_general(%x: memref<30x40x50xf32, #bulkred.scope<global>>, %y: memref<40xf32, #bulkred.scope<global>>) {
  bulkred.reduce logsumexp grid axes [0 : i64, 2 : i64] %x, %y : memref<30x40x50xf32, #bulkred.scope<global>>, memref<40xf32, #bulkred.scope<global>>
  func.return
}
