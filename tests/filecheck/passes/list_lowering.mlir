// bulkred.reduce_list and bulkred.scale_list lowered (passes/variants/grid_list.py): the
// explain rows, the kernel's launch and workspace, the loads through addresses read from
// the descriptor table, and examples/total_norm.mlir assembled for sm_90a and sm_100a.
// RUN: bulkred-opt %S/../../../examples/total_norm.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}' | filecheck %s --check-prefix=EXPLAIN
// RUN: bulkred-opt %S/../../../examples/total_norm.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=PTX
// RUN: bulkred-opt %S/../../../examples/total_norm.mlir -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=PTX
// RUN: not bulkred-opt %s -p 'lower-tile-reductions{target=sm_90a explain=true}' 2>&1 | filecheck %s --check-prefix=DECLINE

// EXPLAIN: // dispatch of 'bulkred.reduce_list' at {{.*}}total_norm.mlir:10:3 on sm_90a
// EXPLAIN: //   grid_list  10        kernel     ok       alone, on parameters  alone, on parameters
// EXPLAIN: // chosen: grid_list
// EXPLAIN: // dispatch of 'bulkred.scale_list' at {{.*}}total_norm.mlir:14:3 on sm_90a
// EXPLAIN: // chosen: grid_list_scale
// EXPLAIN: func.func @total_norm({{.*}}%workspace: memref<4240xi8, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [528], block = [256], cluster = [1]>, bulkred.workspace = 4240 : i64}
// EXPLAIN: ptx.mov {{.*}} : i64 -> !ptx.ptr<global>
// EXPLAIN: ptx.ld.vec nc f32
// EXPLAIN: ptx.atom add u32
// EXPLAIN: func.func @clip({{.*}}) attributes {bulkred.launch = #bulkred.launch<grid = [528], block = [256], cluster = [1]>}

// PTX: .visible .entry total_norm(
// PTX: ld.global.nc.v4.f32
// PTX: ld.global.nc.v4.b16
// PTX: atom.global.add.u32
// PTX: .visible .entry clip(
// PTX: div.rn.f32
// PTX: st.global.b16

// A list op that shares its kernel is declined, with the reason.
// DECLINE: list_lowering.mlir:[[# @LINE + 4]]:3: error: 'bulkred.reduce_list' no lowering variant applies on sm_90a
// DECLINE: grid_list  10        kernel     FAIL     alone, on parameters  kernel also holds bulkred.scale_list
// DECLINE: grid_list  priority 10: rejected: kernel
func.func @shared(%table: memref<?x4xi64, #bulkred.scope<global>>, %norms: memref<?xf32, #bulkred.scope<global>>, %total: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce_list sum prologue [#bulkred.map<square>] %table, %norms, %total : memref<?x4xi64, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  bulkred.scale_list %table, %total : memref<?x4xi64, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
