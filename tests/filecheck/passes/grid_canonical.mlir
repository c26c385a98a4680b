// N-D grid reductions over any axes: the dispatch first puts the request in canonical
// form (passes/canonical.py: extent-1 axes dropped, adjacent reduced or kept axes
// merged) and each form has its variants; the `form` row of the explain table shows
// the form and the merged shape.
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_90a}' | filecheck %s --check-prefix=IR
// RUN: bulkred-opt %s --split-input-file --verify-each -p 'lower-tile-reductions{target=sm_90a explain=true},legalize-for-target{target=sm_90a},lower-bulk-ops,lower-to-ptx{target=sm_90a},check-target{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=EXPLAIN,PTX

// The middle axis of [64, 1000, 256]: grid_middle, one z-block per O.
// EXPLAIN:     grid_rows{{ +}}65{{ +}}form{{ +}}FAIL{{ +}}inner{{ +}}middle [64, 1000, 256]
// EXPLAIN:     grid_middle{{ +}}63{{ +}}form{{ +}}ok{{ +}}middle{{ +}}middle [64, 1000, 256]
// EXPLAIN:     grid_middle{{ +}}63{{ +}}blocks{{ +}}ok{{ +}}O <= 65535{{ +}}O = 64
// EXPLAIN:     grid_gather{{ +}}59{{ +}}form{{ +}}ok{{ +}}any{{ +}}middle [64, 1000, 256]
// EXPLAIN:     // chosen: grid_middle
// IR-LABEL:    func.func @middle(
// IR-SAME:     %workspace: memref<2162944xi8, #bulkred.scope<global>>)
// IR-SAME:     bulkred.launch = #bulkred.launch<grid = [1, 33, 64], block = [64], cluster = [1]>
// PTX-LABEL:   .entry middle(
// PTX:         mov.u32 %r{{[0-9]+}}, %ctaid.z;
// PTX:         ld.global.nc.v4.f32
// PTX:         atom.global.add.u32
func.func @middle(%x: memref<64x1000x256xf32, #bulkred.scope<global>>, %y: memref<64x256xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %x, %y : memref<64x1000x256xf32, #bulkred.scope<global>>, memref<64x256xf32, #bulkred.scope<global>>
  func.return
}

// -----

// Extent-1 axes dropped, axes 2 and 3 merged: [4, 1, 6, 5, 3] over [1, 2, 3] is middle [4, 30, 3].
// EXPLAIN:     grid_middle{{ +}}63{{ +}}form{{ +}}ok{{ +}}middle{{ +}}middle [4, 30, 3]
// EXPLAIN:     // chosen: grid_middle
// IR-LABEL:    func.func @middle_merged(
// IR-SAME:     bulkred.launch = #bulkred.launch<grid = [1, 4, 4], block = [32], cluster = [1]>
func.func @middle_merged(%x: memref<4x1x6x5x3xi32, #bulkred.scope<global>>, %y: memref<4x3xi32, #bulkred.scope<global>>) {
  bulkred.reduce max grid axes [1 : i64, 2 : i64, 3 : i64] %x, %y : memref<4x1x6x5x3xi32, #bulkred.scope<global>>, memref<4x3xi32, #bulkred.scope<global>>
  func.return
}

// -----

// Axes (0, 2) of [A, B, C]: the kept axis between two reduced ones, the general form,
// served by grid_runs: a CTA per dst value (grid x) and row split (grid y); each row of
// 50 contiguous elements read as 25 vectors of 2 (50 is not a multiple of 4), 10 rows
// side by side in a CTA of 256 threads; 40 values x 2 splits, the last CTA of each value
// combining the two partials (the workspace).
// EXPLAIN:     grid_runs{{ +}}66{{ +}}form{{ +}}ok{{ +}}general, strided{{ +}}general [30, 40, 50]
// EXPLAIN:     grid_runs{{ +}}66{{ +}}runs{{ +}}ok
// EXPLAIN:     grid_middle{{ +}}63{{ +}}form{{ +}}FAIL{{ +}}middle{{ +}}general [30, 40, 50]
// EXPLAIN:     grid_gather{{ +}}59{{ +}}form{{ +}}ok{{ +}}any{{ +}}general [30, 40, 50]
// EXPLAIN:     // chosen: grid_runs
// IR-LABEL:    func.func @outer_and_inner(
// IR-SAME:     bulkred.launch = #bulkred.launch<grid = [40, 2], block = [256], cluster = [1]>
// IR-SAME:     bulkred.workspace = 1280 : i64
// PTX-LABEL:   .entry outer_and_inner(
// PTX-NOT:     div.u64
// PTX:         ld.global.nc.v2.f32
// PTX:         shfl.sync.bfly.b32
// PTX:         atom.global.add.u32
// PTX:         ret;
func.func @outer_and_inner(%x: memref<30x40x50xf32, #bulkred.scope<global>>, %y: memref<40xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [0 : i64, 2 : i64] %x, %y : memref<30x40x50xf32, #bulkred.scope<global>>, memref<40xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The innermost axis kept, [3, 4, 5, 2] over (0, 2): general [3, 4, 5, 2] of grid_gather
// (grid_runs needs the innermost axis reduced). Lane l takes the reduced elements l,
// l + 32, ..., each address from its indices by rem / div.
// EXPLAIN:     grid_runs{{ +}}66{{ +}}runs{{ +}}FAIL{{ +}}2 reduced axes, the innermost contiguous{{ +}}innermost axis kept
// EXPLAIN:     grid_gather{{ +}}59{{ +}}form{{ +}}ok{{ +}}any{{ +}}general [3, 4, 5, 2]
// EXPLAIN:     // chosen: grid_gather
// PTX-LABEL:   .entry short_runs(
// PTX:         rem.u64
// PTX:         div.u64
// PTX:         ld.global.f32
func.func @short_runs(%x: memref<3x4x5x2xf32, #bulkred.scope<global>>, %y: memref<4x2xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [0 : i64, 2 : i64] %x, %y : memref<3x4x5x2xf32, #bulkred.scope<global>>, memref<4x2xf32, #bulkred.scope<global>>
  func.return
}

// -----

// Rank 8, every other axis: general [2, 3, 2, 3, 2, 3, 2, 3] (4 reduced axes: grid_gather).
// EXPLAIN:     grid_runs{{ +}}66{{ +}}runs{{ +}}FAIL{{ +}}2 reduced axes, the innermost contiguous{{ +}}innermost axis kept
// EXPLAIN:     grid_gather{{ +}}59{{ +}}form{{ +}}ok{{ +}}any{{ +}}general [2, 3, 2, 3, 2, 3, 2, 3]
// EXPLAIN:     // chosen: grid_gather
func.func @rank8(%x: memref<2x3x2x3x2x3x2x3xf16, #bulkred.scope<global>>, %y: memref<3x3x3x3xf16, #bulkred.scope<global>>) {
  bulkred.reduce min grid axes [0 : i64, 2 : i64, 4 : i64, 6 : i64] %x, %y : memref<2x3x2x3x2x3x2x3xf16, #bulkred.scope<global>>, memref<3x3x3x3xf16, #bulkred.scope<global>>
  func.return
}

// -----

// Trailing axes merged into rows; leading ones into columns; 1s dropped.
// EXPLAIN:     grid_rows{{ +}}65{{ +}}form{{ +}}ok{{ +}}inner{{ +}}inner [6, 20]
// EXPLAIN:     // chosen: grid_rows
func.func @rows(%x: memref<2x3x4x5xf32, #bulkred.scope<global>>, %y: memref<2x3xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [2 : i64, 3 : i64] %x, %y : memref<2x3x4x5xf32, #bulkred.scope<global>>, memref<2x3xf32, #bulkred.scope<global>>
  func.return
}

// -----

// EXPLAIN:     grid_split_det{{ +}}62{{ +}}form{{ +}}ok{{ +}}outer{{ +}}outer [35, 9]
// EXPLAIN:     // chosen: grid_split_det
func.func @columns(%x: memref<1x5x7x1x9xf32, #bulkred.scope<global>>, %y: memref<1x9xf32, #bulkred.scope<global>>) {
  bulkred.reduce max grid axes [0 : i64, 1 : i64, 2 : i64] %x, %y : memref<1x5x7x1x9xf32, #bulkred.scope<global>>, memref<1x9xf32, #bulkred.scope<global>>
  func.return
}

// -----

// Only extent-1 axes reduced: each dst value is one element, a single row: outer [1, 12]
// (48 bytes: under grid_split_bulk's size, grid_split_det's one CTA).
// EXPLAIN:     grid_split_bulk{{ +}}64{{ +}}form{{ +}}ok{{ +}}outer{{ +}}outer [1, 12]
// EXPLAIN:     grid_split_bulk{{ +}}64{{ +}}size{{ +}}FAIL{{ +}}>= 2097152 bytes{{ +}}48 bytes
// EXPLAIN:     // chosen: grid_split_det
func.func @copy(%x: memref<3x1x4xf32, #bulkred.scope<global>>, %y: memref<3x4xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %x, %y : memref<3x1x4xf32, #bulkred.scope<global>>, memref<3x4xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The kept extents are 1: whole [8].
// EXPLAIN:     grid_full{{ +}}60{{ +}}form{{ +}}ok{{ +}}whole{{ +}}whole [8]
// EXPLAIN:     // chosen: grid_full
func.func @whole(%x: memref<2x1x4xf32, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [0 : i64, 2 : i64] %x, %y : memref<2x1x4xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A strided view (x[:, ::6] of [6, 240]) read in place: the strides do not merge, so the
// form is `strided` with the innermost stride 6 (grid_runs reads unit-stride runs only),
// which grid_gather takes; each element's address is its indices
// times the view's element strides (the run of 40 has stride 6, 24 bytes). A permuted
// view is first put in stride order (stride_order.mlir): a transpose of a dense array
// takes the dense array's variant.
// EXPLAIN:     grid_rows{{ +}}65{{ +}}form{{ +}}FAIL{{ +}}inner{{ +}}strided [6, 40] strides [240, 6] axes [1]
// EXPLAIN:     grid_gather{{ +}}59{{ +}}form{{ +}}ok{{ +}}any{{ +}}strided [6, 40] strides [240, 6] axes [1]
// EXPLAIN:     // chosen: grid_gather
// IR-LABEL:    func.func @stepped(
// IR-SAME:     %x: memref<6x40xf32, strided<[240, 6]>, #bulkred.scope<global>>
// IR:          ptx.mul.lo s64
// IR:          ptx.ld f32
// PTX-LABEL:   .entry stepped(
// PTX:         mov.u64 [[STEP:%rd[0-9]+]], 24;
// PTX-NEXT:    mul.lo.s64 %rd{{[0-9]+}}, %rd{{[0-9]+}}, [[STEP]];
// PTX:         ld.global.f32
// PTX:         shfl.sync.bfly.b32
func.func @stepped(%x: memref<6x40xf32, strided<[240, 6]>, #bulkred.scope<global>>, %y: memref<6xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %x, %y : memref<6x40xf32, strided<[240, 6]>, #bulkred.scope<global>>, memref<6xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A slice of whole rows (x[2:6] of [8, 4096]) is contiguous: it keeps its fast form.
// EXPLAIN:     grid_rows{{ +}}65{{ +}}form{{ +}}ok{{ +}}inner{{ +}}inner [4, 4096]
// EXPLAIN:     // chosen: grid_rows
func.func @row_slice(%x: memref<4x4096xf32, strided<[4096, 1]>, #bulkred.scope<global>>, %y: memref<4xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %x, %y : memref<4x4096xf32, strided<[4096, 1]>, #bulkred.scope<global>>, memref<4xf32, #bulkred.scope<global>>
  func.return
}
