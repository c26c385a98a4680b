// Views analyzed in stride order (issue 23, section 4; passes/canonical.py): a strided
// src's axes are put in descending-stride order before the form is named, so a
// permuted view reaches the variant of the dense array it was permuted from, with the
// same launch. The form row says so: `(stride order: axes [...])`, the src axes in the
// order analyzed. Where that order would reverse the kept axes (dst holds them in the
// op's order), or the reduced axes of an argmax (its index counts them in the op's
// order), the view keeps its `strided` form and the row says why.
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_90a}' | filecheck %s --check-prefix=IR
// RUN: bulkred-opt %s --split-input-file --verify-each -p 'lower-tile-reductions{target=sm_90a explain=true},legalize-for-target{target=sm_90a},lower-bulk-ops,lower-to-ptx{target=sm_90a},check-target{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=EXPLAIN,PTX

// x.t().sum(1) of a contiguous [4096, 1024] x: the column sum of x, outer [4096, 1024]
// in stride order, grid_split_bulk as the dense array over [0] below (was: strided
// [1024, 4096] strides [1, 1024] axes [1], grid_gather).
// EXPLAIN:     grid_rows{{ +}}65{{ +}}form{{ +}}FAIL{{ +}}inner{{ +}}outer [4096, 1024] (stride order: axes [1, 0])
// EXPLAIN:     grid_split_bulk{{ +}}64{{ +}}form{{ +}}ok{{ +}}outer{{ +}}outer [4096, 1024] (stride order: axes [1, 0])
// EXPLAIN:     grid_gather{{ +}}59{{ +}}form{{ +}}ok{{ +}}any{{ +}}outer [4096, 1024] (stride order: axes [1, 0])
// EXPLAIN:     // chosen: grid_split_bulk
// IR-LABEL:    func.func @colsum_t(
// IR-SAME:     %x: memref<1024x4096xf32, strided<[1, 1024]>, #bulkred.scope<global>>
// IR-SAME:     bulkred.launch = #bulkred.launch<grid = [1, 512], block = [256], cluster = [1]>, bulkred.zero_init = [1 : i64]
// PTX-LABEL:   .entry colsum_t(
// PTX:         ld.global.nc.v4.f32
// PTX:         cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32
func.func @colsum_t(%x: memref<1024x4096xf32, strided<[1, 1024]>, #bulkred.scope<global>>, %y: memref<1024xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %x, %y : memref<1024x4096xf32, strided<[1, 1024]>, #bulkred.scope<global>>, memref<1024xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The dense equivalent: the same form (no order), variant and launch.
// EXPLAIN:     grid_split_bulk{{ +}}64{{ +}}form{{ +}}ok{{ +}}outer{{ +}}outer [4096, 1024]{{$}}
// EXPLAIN:     // chosen: grid_split_bulk
// IR-LABEL:    func.func @colsum(
// IR-SAME:     bulkred.launch = #bulkred.launch<grid = [1, 512], block = [256], cluster = [1]>, bulkred.zero_init = [1 : i64]
// PTX-LABEL:   .entry colsum(
// PTX:         cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32
func.func @colsum(%x: memref<4096x1024xf32, #bulkred.scope<global>>, %y: memref<1024xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [0 : i64] %x, %y : memref<4096x1024xf32, #bulkred.scope<global>>, memref<1024xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A transpose of [40, 8] over its axis 1 (x.t().sum(1)): outer [40, 8], 1280 bytes,
// under grid_split_bulk's size: grid_split_det, vector loads, no index arithmetic (was:
// grid_gather, div/rem of each value's index and scalar loads of a stride of 32 bytes).
// EXPLAIN:     grid_split_det{{ +}}62{{ +}}form{{ +}}ok{{ +}}outer{{ +}}outer [40, 8] (stride order: axes [1, 0])
// EXPLAIN:     // chosen: grid_split_det
// IR-LABEL:    func.func @transposed(
// IR-SAME:     %x: memref<8x40xf32, strided<[1, 8]>, #bulkred.scope<global>>
// PTX-LABEL:   .entry transposed(
// PTX-NOT:     rem.u64
// PTX:         ld.global.nc.v4.f32
// PTX-NOT:     rem.u64
// PTX:         ret;
func.func @transposed(%x: memref<8x40xf32, strided<[1, 8]>, #bulkred.scope<global>>, %y: memref<8xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %x, %y : memref<8x40xf32, strided<[1, 8]>, #bulkred.scope<global>>, memref<8xf32, #bulkred.scope<global>>
  func.return
}

// -----

// [64, 1000, 256].permute(0, 2, 1) over its last axis: the middle axis of the dense
// array, middle [64, 1000, 256], grid_middle with its launch (tests/filecheck/passes/
// grid_canonical.mlir's @middle).
// EXPLAIN:     grid_middle{{ +}}63{{ +}}form{{ +}}ok{{ +}}middle{{ +}}middle [64, 1000, 256] (stride order: axes [0, 2, 1])
// EXPLAIN:     // chosen: grid_middle
// IR-LABEL:    func.func @middle_p(
// IR-SAME:     bulkred.launch = #bulkred.launch<grid = [1, 33, 64], block = [64], cluster = [1]>
// PTX-LABEL:   .entry middle_p(
// PTX:         ld.global.nc.v4.f32
func.func @middle_p(%x: memref<64x256x1000xf32, strided<[256000, 1, 256]>, #bulkred.scope<global>>, %y: memref<64x256xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [2 : i64] %x, %y : memref<64x256x1000xf32, strided<[256000, 1, 256]>, #bulkred.scope<global>>, memref<64x256xf32, #bulkred.scope<global>>
  func.return
}

// -----

// [40, 6, 2].permute(2, 1, 0) over its axis 2: stride order [40, 6, 2] would write dst
// [2, 6] 6-major, so the view keeps its order and its strided form: grid_gather, each
// value's run of 40 with a stride of 48 bytes read by the lanes together.
// EXPLAIN:     grid_gather{{ +}}59{{ +}}form{{ +}}ok{{ +}}any{{ +}}strided [2, 6, 40] strides [1, 2, 12] axes [2] (not in stride order: it would reorder the kept axes, which dst holds in the op's order)
// EXPLAIN:     // chosen: grid_gather
// PTX-LABEL:   .entry kept_reversed(
// PTX:         mov.u64 [[STEP:%rd[0-9]+]], 48;
// PTX-NEXT:    mul.lo.s64 %rd{{[0-9]+}}, %rd{{[0-9]+}}, [[STEP]];
// PTX:         ld.global.f32
func.func @kept_reversed(%x: memref<2x6x40xf32, strided<[1, 2, 12]>, #bulkred.scope<global>>, %y: memref<2x6xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [2 : i64] %x, %y : memref<2x6x40xf32, strided<[1, 2, 12]>, #bulkred.scope<global>>, memref<2x6xf32, #bulkred.scope<global>>
  func.return
}

// -----

// argmax of one axis of a transpose (x.t().argmax(1)): its index along that axis is the
// same in any order of the axes: outer [40, 6], grid_split_det.
// EXPLAIN:     grid_split_det{{ +}}62{{ +}}form{{ +}}ok{{ +}}outer{{ +}}outer [40, 6] (stride order: axes [1, 0])
// EXPLAIN:     // chosen: grid_split_det
func.func @argmax_t(%x: memref<6x40xf32, strided<[1, 6]>, #bulkred.scope<global>>, %i: memref<6xi64, #bulkred.scope<global>>) {
  bulkred.reduce argmax grid axes [1 : i64] %x, %i : memref<6x40xf32, strided<[1, 6]>, #bulkred.scope<global>>, memref<6xi64, #bulkred.scope<global>>
  func.return
}

// -----

// argmax of every axis of a transpose: the flat index of the view's row-major order
// (not of its memory's), so its reduced axes keep their order: strided, grid_gather.
// A sum of the same view is whole [240] in stride order (grid_full).
// EXPLAIN:     grid_full{{ +}}60{{ +}}form{{ +}}FAIL{{ +}}whole{{ +}}strided [6, 40] strides [1, 6] axes [0, 1] (not in stride order: the index counts the reduced axes in the op's order)
// EXPLAIN:     // chosen: grid_gather
// EXPLAIN:     grid_full{{ +}}60{{ +}}form{{ +}}ok{{ +}}whole{{ +}}whole [240] (stride order: axes [1, 0])
// EXPLAIN:     // chosen: grid_full
func.func @argmax_all_t(%x: memref<6x40xf32, strided<[1, 6]>, #bulkred.scope<global>>, %i: memref<1xi64, #bulkred.scope<global>>) {
  bulkred.reduce argmax grid %x, %i : memref<6x40xf32, strided<[1, 6]>, #bulkred.scope<global>>, memref<1xi64, #bulkred.scope<global>>
  func.return
}
func.func @sum_all_t(%x: memref<6x40xf32, strided<[1, 6]>, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid %x, %y : memref<6x40xf32, strided<[1, 6]>, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
