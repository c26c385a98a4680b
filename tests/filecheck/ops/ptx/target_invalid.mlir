// Target checks: every ptx op declares the lowest SM / PTX ISA it needs, and
// check-target rejects an op the target cannot run, naming op, need and target.
// RUN: not bulkred-opt %s --split-input-file -p 'check-target{target=sm_90a}' 2>&1 | filecheck %s --check-prefix=SM90A
// RUN: bulkred-opt %s --split-input-file -p 'check-target{target=sm_100a}' | filecheck %s --check-prefix=SM100A
// RUN: not bulkred-opt %s --split-input-file -p 'check-target{target=sm_100}' 2>&1 | filecheck %s --check-prefix=SM100

// SM100A-LABEL: func.func @redux_f32
func.func @redux_f32(%x: f32, %m: i32) {
  // SM90A: target_invalid.mlir:[[# @LINE + 2]]:3: error: 'ptx.redux.sync' 'redux.sync.max.f32' needs sm_100a and PTX ISA 8.6, but the target is sm_90a
  // SM100: error: 'ptx.redux.sync' 'redux.sync.max.f32' needs sm_100a and PTX ISA 8.6, but the target is sm_100
  %0 = ptx.redux.sync max f32 %x, %m : f32
  func.return
}

// -----

// SM100A-LABEL: func.func @packed_add
func.func @packed_add(%a: vector<2xf32>) {
  // SM90A: error: 'ptx.add.f32x2' 'add.rn.ftz.f32x2' needs sm_100 and PTX ISA 8.6, but the target is sm_90a
  %0 = ptx.add.f32x2 rn ftz %a, %a : vector<2xf32>
  func.return
}

// -----

// SM100A-LABEL: func.func @max3
func.func @max3(%a: f32) {
  // SM90A: error: 'ptx.max3' 'max.f32' needs sm_100 and PTX ISA 8.8, but the target is sm_90a
  %0 = ptx.max3 %a, %a, %a : f32
  func.return
}
