// A bulkred.launch written on a grid-scope or list kernel that its variant cannot take
// is refused at the op's location, never replaced (the launches taken: launch_attr.mlir).
// A grid-scope lowering chooses its block and cluster; it takes the grid asked for only
// where its CTAs share the work in a loop (grid_rows, grid_full, grid_gather). The
// message names both launches and the variant; bulkred-opt exits 1.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics -p 'lower-tile-reductions{target=sm_90a}' | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_90a}' 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// The issue's case: 33 threads (not whole warps) for a whole sum: grid_full's one CTA
// takes a block of whole warps only.
// STDERR: launch_attr_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' the kernel's bulkred.launch asks grid = [1], block = [33], cluster = [1]; grid_full launches grid = [1], block = [1024], cluster = [1]
// CHECK:  launch_attr_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' the kernel's bulkred.launch asks grid = [1], block = [33], cluster = [1]; grid_full launches grid = [1], block = [1024], cluster = [1] (a grid-scope lowering chooses its block and cluster, and takes the grid asked for where its CTAs share the work in a loop): write bulkred.launch = #bulkred.launch<grid = [1], block = [1024], cluster = [1]> or none
func.func @block_33(%x: memref<65539xf32, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [33], cluster = [1]>} {
  bulkred.reduce sum grid %x, %y : memref<65539xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// Several CTAs with another block than the variant's: the grid is taken with its block only.
// STDERR: launch_attr_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' the kernel's bulkred.launch asks grid = [3], block = [128], cluster = [1]; grid_rows launches grid = [5], block = [256], cluster = [1]
// CHECK:  launch_attr_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' the kernel's bulkred.launch asks grid = [3], block = [128], cluster = [1]; grid_rows launches grid = [5], block = [256], cluster = [1]
func.func @rows_block_128(%x: memref<40x4096xf32, #bulkred.scope<global>>, %y: memref<40xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [3], block = [128], cluster = [1]>} {
  bulkred.reduce sum grid axes [1 : i64] %x, %y : memref<40x4096xf32, #bulkred.scope<global>>, memref<40xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A cluster the variant does not launch.
// CHECK:  launch_attr_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' the kernel's bulkred.launch asks grid = [8], block = [512], cluster = [2]; grid_full launches grid = [8], block = [512], cluster = [1]
func.func @cluster_2(%x: memref<65539xf32, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [8], block = [512], cluster = [2]>} {
  bulkred.reduce sum grid %x, %y : memref<65539xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// Column sums (grid_split_bulk): its grid is its tiling of the columns, not taken.
// CHECK:  launch_attr_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' the kernel's bulkred.launch asks grid = [4], block = [256], cluster = [1]; grid_split_bulk launches grid = [4, 264]
func.func @columns(%x: memref<65536x4096xf32, #bulkred.scope<global>>, %y: memref<4096xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [4], block = [256], cluster = [1]>} {
  bulkred.reduce sum grid axes [0 : i64] %x, %y : memref<65536x4096xf32, #bulkred.scope<global>>, memref<4096xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A list kernel: its grid is the one its descriptor table's chunks were made for.
// CHECK:  launch_attr_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce_list' the kernel's bulkred.launch asks grid = [4], block = [256], cluster = [1]; grid_list launches grid =
func.func @list(%table: memref<?x4xi64, #bulkred.scope<global>>, %norms: memref<?xf32, #bulkred.scope<global>>, %total: memref<1xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [4], block = [256], cluster = [1]>} {
  bulkred.reduce_list sum prologue [#bulkred.map<square>] %table, %norms, %total : memref<?x4xi64, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// One thread written by the user is a launch like any other (only a kernel without a
// bulkred.launch asks none): grid_full takes no block that is not whole warps.
// STDERR: launch_attr_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' the kernel's bulkred.launch asks grid = [1], block = [1], cluster = [1]; grid_full launches grid = [1], block = [1024], cluster = [1]
// CHECK:  launch_attr_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' the kernel's bulkred.launch asks grid = [1], block = [1], cluster = [1]; grid_full launches grid = [1], block = [1024], cluster = [1]
func.func @one_thread(%x: memref<65539xf32, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1], cluster = [1]>} {
  bulkred.reduce sum grid %x, %y : memref<65539xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// Row sums asked in one thread: grid_rows takes a grid only with its block of 256.
// CHECK:  launch_attr_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' the kernel's bulkred.launch asks grid = [1], block = [1], cluster = [1]; grid_rows launches grid = [5], block = [256], cluster = [1]
func.func @rows_one_thread(%x: memref<40x4096xf32, #bulkred.scope<global>>, %y: memref<40xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1], cluster = [1]>} {
  bulkred.reduce sum grid axes [1 : i64] %x, %y : memref<40x4096xf32, #bulkred.scope<global>>, memref<40xf32, #bulkred.scope<global>>
  func.return
}
