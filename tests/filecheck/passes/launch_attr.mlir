// A bulkred.launch written on a grid-scope kernel is honoured where the variant can take
// it: the variants whose CTAs share the work in a grid-stride loop (grid_rows, grid_full,
// grid_gather) take the grid asked for with their block, and grid_full's one-CTA path
// takes the block asked for with grid [1] (any multiple of 32 up to its limit). The
// launch is then the kernel's, and the PTX's .reqntid is its block. The refusals:
// launch_attr_invalid.mlir. Numerics of these launches: tests/test_launch_attr.py.
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_90a}' | filecheck %s --check-prefix=IR
// RUN: bulkred-opt %s --split-input-file -p 'bulkred-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=PTX

// Row sums in 3 CTAs (grid_rows would take 5 for 40 rows): the warps loop over the rows,
// 3 CTAs of 8 warps apart.
// IR-LABEL: func.func @rows_in_3_ctas(
// IR-SAME:  bulkred.launch = #bulkred.launch<grid = [3], block = [256], cluster = [1]>
// IR:       [[STEP:%.*]] = arith.constant 24 : i64
// IR-NEXT:  scf.for {{.*}} step [[STEP]] : i64 {
// PTX-LABEL: .entry rows_in_3_ctas(
// PTX:       .reqntid 256, 1, 1
func.func @rows_in_3_ctas(%x: memref<40x4096xf32, #bulkred.scope<global>>, %y: memref<40xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [3], block = [256], cluster = [1]>} {
  bulkred.reduce sum grid axes [1 : i64] %x, %y : memref<40x4096xf32, #bulkred.scope<global>>, memref<40xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A whole sum in 2 CTAs of grid_full's block (it would take 8): the workspace holds 2 partials.
// IR-LABEL: func.func @whole_in_2_ctas(
// IR-SAME:  bulkred.launch = #bulkred.launch<grid = [2], block = [512], cluster = [1]>, bulkred.workspace = 32 : i64
// PTX-LABEL: .entry whole_in_2_ctas(
// PTX:       .reqntid 512, 1, 1
func.func @whole_in_2_ctas(%x: memref<65539xf32, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [2], block = [512], cluster = [1]>} {
  bulkred.reduce sum grid %x, %y : memref<65539xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// One CTA of 64 threads (grid_full's one-CTA path would take 1024): no workspace.
// IR-LABEL: func.func @one_cta_of_64(
// IR-SAME:  bulkred.launch = #bulkred.launch<grid = [1], block = [64], cluster = [1]>
// IR-NOT:   bulkred.workspace
// PTX-LABEL: .entry one_cta_of_64(
// PTX:       .reqntid 64, 1, 1
func.func @one_cta_of_64(%x: memref<65539xf32, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [64], cluster = [1]>} {
  bulkred.reduce sum grid %x, %y : memref<65539xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The launch a variant chooses itself, written out, is kept as it is.
// IR-LABEL: func.func @as_chosen(
// IR-SAME:  bulkred.launch = #bulkred.launch<grid = [8], block = [512], cluster = [1]>
func.func @as_chosen(%x: memref<65539xf32, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [8], block = [512], cluster = [1]>} {
  bulkred.reduce sum grid %x, %y : memref<65539xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A general form (grid_gather: its warps loop over the kept values) in 5 CTAs.
// IR-LABEL: func.func @gather_in_5_ctas(
// IR-SAME:  bulkred.launch = #bulkred.launch<grid = [5], block = [256], cluster = [1]>
func.func @gather_in_5_ctas(%x: memref<5x6x7x8xf32, #bulkred.scope<global>>, %y: memref<6x8xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [5], block = [256], cluster = [1]>} {
  bulkred.reduce sum grid axes [0 : i64, 2 : i64] %x, %y : memref<5x6x7x8xf32, #bulkred.scope<global>>, memref<6x8xf32, #bulkred.scope<global>>
  func.return
}

// -----

// No bulkred.launch (what builder.kernel writes when the caller gives none): "none
// asked", the variant chooses its own launch (grid_rows: 5 CTAs of 256 threads for 40 rows).
// IR-LABEL: func.func @no_launch(
// IR-SAME:  bulkred.launch = #bulkred.launch<grid = [5], block = [256], cluster = [1]>
// PTX-LABEL: .entry no_launch(
// PTX:       .reqntid 256, 1, 1
func.func @no_launch(%x: memref<40x4096xf32, #bulkred.scope<global>>, %y: memref<40xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %x, %y : memref<40x4096xf32, #bulkred.scope<global>>, memref<40xf32, #bulkred.scope<global>>
  func.return
}
