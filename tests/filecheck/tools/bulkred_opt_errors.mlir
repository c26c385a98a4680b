// bulkred-opt reports bad input as a located diagnostic with a non-zero exit
// status and never a Python traceback.
// RUN: not bulkred-opt %s 2>&1 | filecheck %s
// RUN: not bulkred-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not bulkred-opt %S/../ops/ptx/redux.mlir -p 'check-target{target=sm_9x}' 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not bulkred-opt %S/does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING

// CHECK: bulkred_opt_errors.mlir:[[# @LINE + 4]]:{{[0-9]+}}
// CHECK: Operation ptx.no_such_op is not registered
// CHECK-NOT: Traceback
func.func @unknown() {
  "ptx.no_such_op"() : () -> ()
  func.return
}

// PASS: bulkred-opt: error: Unrecognized passes: ['no-such-pass']
// PASS-NOT: Traceback
// TARGET: {{^}}bulkred-opt: error: check-target: 'target' must look like sm_90, sm_90a or sm_100a, got 'sm_9x'
// TARGET-NOT: Traceback
// MISSING: bulkred-opt: error: {{.*}}does-not-exist.mlir
// MISSING-NOT: Traceback
