// NaN and prod at every scope (docs/scopes.md): float max/min are .NaN by default
// (max.NaN.f32 in every combining step, redux.sync.max.NaN.f32 on sm_100a) and plain with
// ignore_nan; prod is mul.rn / mul.lo, and the variants whose instruction has no multiply
// (redux.sync, red.async, cp.reduce.async.bulk) decline it in their kind row.
// RUN: bulkred-opt %s --split-input-file --verify-each -p 'lower-tile-reductions{target=sm_90a explain=true},legalize-for-target{target=sm_90a},lower-bulk-ops,lower-to-ptx{target=sm_90a},check-target{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=EXPLAIN,PTX
// RUN: bulkred-opt %s --split-input-file -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=SM100

// A warp max of f32: a butterfly of max.NaN.f32 on sm_90a; redux.sync .NaN on sm_100a.
// EXPLAIN:    // chosen: warp_shuffle
// PTX-LABEL:  .entry warp_max(
// PTX-COUNT-5: max.NaN.f32
// SM100-LABEL: .entry warp_max(
// SM100:      redux.sync.max.NaN.f32
func.func @warp_max(%in: memref<1xf32, #bulkred.scope<global>>, %out: memref<1xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  %x = memref.alloca() : memref<1xf32, #bulkred.scope<local>>
  %r = memref.alloca() : memref<1xf32, #bulkred.scope<local>>
  bulkred.copy %in, %x : memref<1xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<local>>
  bulkred.reduce max warp %x, %r : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  bulkred.copy %r, %out : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// ignore_nan: the plain forms.
// PTX-LABEL:  .entry warp_max_ignore_nan(
// PTX-NOT:    NaN
// PTX-COUNT-5: max.f32
// SM100-LABEL: .entry warp_max_ignore_nan(
// SM100-NOT:  NaN
// SM100:      redux.sync.max.f32
func.func @warp_max_ignore_nan(%in: memref<1xf32, #bulkred.scope<global>>, %out: memref<1xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  %x = memref.alloca() : memref<1xf32, #bulkred.scope<local>>
  %r = memref.alloca() : memref<1xf32, #bulkred.scope<local>>
  bulkred.copy %in, %x : memref<1xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<local>>
  bulkred.reduce max warp ignore_nan %x, %r : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  bulkred.copy %r, %out : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// An int32 warp prod: redux.sync has no mul, so warp_redux declines and the butterfly
// multiplies (mul.lo.s32, wrapping).
// EXPLAIN:    warp_redux 32 kind FAIL sum, max, min, and, or, xor (redux.sync has no mul) prod
// EXPLAIN:    warp_redux priority 32: rejected: kind
// EXPLAIN:    // chosen: warp_shuffle
// PTX-LABEL:  .entry warp_prod(
// PTX-NOT:    redux.sync
// PTX-COUNT-5: mul.lo.s32
func.func @warp_prod(%in: memref<1xi32, #bulkred.scope<global>>, %out: memref<1xi32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  %x = memref.alloca() : memref<1xi32, #bulkred.scope<local>>
  %r = memref.alloca() : memref<1xi32, #bulkred.scope<local>>
  bulkred.copy %in, %x : memref<1xi32, #bulkred.scope<global>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.reduce prod warp %x, %r : memref<1xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.copy %r, %out : memref<1xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<global>>
  func.return
}

// -----

// A CTA min of f16: combined in f32 with min.NaN.f32 (a NaN stays NaN through cvt.rn.f16.f32).
// EXPLAIN:    // chosen: cta_shared
// PTX-LABEL:  .entry cta_min(
// PTX:        cvt.f32.f16
// PTX:        min.NaN.f32
// PTX:        bar.sync 0
// PTX:        cvt.rn.f16.f32
func.func @cta_min(%in: memref<1xf16, #bulkred.scope<global>>, %out: memref<1xf16, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [256], cluster = [1]>} {
  %x = memref.alloca() : memref<1xf16, #bulkred.scope<local>>
  %r = memref.alloca() : memref<1xf16, #bulkred.scope<local>>
  bulkred.copy %in, %x : memref<1xf16, #bulkred.scope<global>>, memref<1xf16, #bulkred.scope<local>>
  bulkred.reduce min cta %x, %r : memref<1xf16, #bulkred.scope<local>>, memref<1xf16, #bulkred.scope<local>>
  bulkred.copy %r, %out : memref<1xf16, #bulkred.scope<local>>, memref<1xf16, #bulkred.scope<global>>
  func.return
}

// -----

// An int32 cluster prod: red.async has no mul, so cluster_dsmem combines in rank order.
// EXPLAIN:    cluster_red_async 51 kind FAIL sum, max, min, and, or, xor (red.async has no mul) prod
// EXPLAIN:    // chosen: cluster_dsmem
// PTX-LABEL:  .entry cluster_prod(
// PTX-NOT:    red.async
// PTX:        mul.lo.s32
func.func @cluster_prod(%in: memref<1xi32, #bulkred.scope<global>>, %out: memref<1xi32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [2], block = [64], cluster = [2]>} {
  %x = memref.alloca() : memref<1xi32, #bulkred.scope<local>>
  %r = memref.alloca() : memref<1xi32, #bulkred.scope<local>>
  bulkred.copy %in, %x : memref<1xi32, #bulkred.scope<global>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.reduce prod cluster %x, %r : memref<1xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.copy %r, %out : memref<1xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<global>>
  func.return
}

// -----

// A whole int32 prod: grid_full_cluster (red.async) declines, grid_full multiplies.
// EXPLAIN:    grid_full_cluster 61 kind FAIL sum, max, min, and, or, xor (red.async has no mul) prod
// EXPLAIN:    // chosen: grid_full
// PTX-LABEL:  .entry full_prod(
// PTX-NOT:    red.async
// PTX:        mul.lo.s32
func.func @full_prod(%x: memref<1048576xi32, #bulkred.scope<global>>, %y: memref<1xi32, #bulkred.scope<global>>) {
  bulkred.reduce prod grid %x, %y : memref<1048576xi32, #bulkred.scope<global>>, memref<1xi32, #bulkred.scope<global>>
  func.return
}

// -----

// A column prod of f32: grid_split_bulk (cp.reduce.async.bulk .add) declines, grid_split_det
// multiplies the partial rows in order.
// EXPLAIN:    grid_split_bulk 64 kind FAIL sum prod
// EXPLAIN:    // chosen: grid_split_det
// PTX-LABEL:  .entry col_prod(
// PTX-NOT:    cp.reduce.async.bulk
// PTX:        mul.rn.f32
func.func @col_prod(%x: memref<4096x1024xf32, #bulkred.scope<global>>, %y: memref<1024xf32, #bulkred.scope<global>>) {
  bulkred.reduce prod grid axes [0 : i64] %x, %y : memref<4096x1024xf32, #bulkred.scope<global>>, memref<1024xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A row max of f32: max.NaN.f32 per lane and in the butterfly; redux.sync .NaN on sm_100a.
// EXPLAIN:    // chosen: grid_rows
// PTX-LABEL:  .entry row_max(
// PTX:        max.NaN.f32
// SM100-LABEL: .entry row_max(
// SM100:      max.NaN.f32
// SM100:      redux.sync.max.NaN.f32
func.func @row_max(%x: memref<64x256xf32, #bulkred.scope<global>>, %y: memref<64xf32, #bulkred.scope<global>>) {
  bulkred.reduce max grid axes [1 : i64] %x, %y : memref<64x256xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A whole min of f32 with ignore_nan: no .NaN anywhere, and the accumulators start at NaN
// (0f7FC00000), which min.f32 drops, so that only an all-NaN input gives NaN (+inf would
// turn it into +inf).
// EXPLAIN:    // chosen: grid_full
// PTX-LABEL:  .entry full_min_ignore_nan(
// PTX-NOT:    NaN
// PTX:        mov.f32 %f{{[0-9]+}}, 0f7FC00000;
// PTX:        min.f32
// PTX-NOT:    NaN
// PTX:        ret;
func.func @full_min_ignore_nan(%x: memref<65536xf32, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce min grid ignore_nan %x, %y : memref<65536xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
