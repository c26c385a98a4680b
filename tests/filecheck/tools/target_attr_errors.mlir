// A module's `bulkred.target` attribute must name a known target: a value that
// is not a string, or an unknown SM, is an error located on the module (never
// ignored in favour of the default sm_90a), for every pass that reads it and -t ptx.
// RUN: not bulkred-opt %s --split-input-file -p check-target 2>&1 | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -p bulkred-to-ptx 2>&1 | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -t ptx 2>&1 | filecheck %s
// A pass option takes precedence over the attribute.
// RUN: bulkred-opt %s --split-input-file -p 'check-target{target=sm_100a}' | filecheck %s --check-prefix=OPTION

// CHECK-NOT: Traceback
// CHECK: target_attr_errors.mlir:[[# @LINE + 1]]:1: error: 'builtin.module' 'bulkred.target' must be a string such as "sm_90a", got 90 : i64
builtin.module attributes {bulkred.target = 90} {
  // OPTION: func.func @integer
  func.func @integer() {
    func.return
  }
}

// -----

// CHECK: target_attr_errors.mlir:[[# @LINE + 1]]:1: error: 'builtin.module' 'bulkred.target' must be one of sm_80, sm_86, sm_87, sm_88, sm_89, sm_90, sm_90a, sm_100, sm_100a, sm_100f, sm_103, sm_103a, sm_103f, sm_110, sm_110a, sm_110f, sm_120, sm_120a, sm_120f, sm_121, sm_121a, sm_121f, got 'sm_101a'
builtin.module attributes {bulkred.target = "sm_101a"} {
  // OPTION: func.func @unknown_sm
  func.func @unknown_sm() {
    func.return
  }
}

// -----

// CHECK: target_attr_errors.mlir:[[# @LINE + 1]]:1: error: 'builtin.module' 'bulkred.target' must look like sm_90, sm_90a or sm_100a, got 'hopper'
builtin.module attributes {bulkred.target = "hopper"} {
  // OPTION: func.func @bad_name
  func.func @bad_name() {
    func.return
  }
}
// CHECK-NOT: error
