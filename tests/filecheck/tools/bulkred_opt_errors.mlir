// bulkred-opt reports bad input as a located diagnostic with a non-zero exit
// status and never a Python traceback.
// RUN: not bulkred-opt %s 2>&1 | filecheck %s
// RUN: not bulkred-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not bulkred-opt %S/../ops/ptx/redux.mlir -p 'check-target{target=sm_9x}' 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not bulkred-opt %S/does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not bulkred-opt %s -p lower-tile-reduction 2>&1 | filecheck %s --check-prefix=NEAR
// RUN: not bulkred-opt %s -p lower-tile-reductions -p lower-to-ptx 2>&1 | filecheck %s --check-prefix=PTWICE
// RUN: not bulkred-opt %s -t mlir -t ptx 2>&1 | filecheck %s --check-prefix=TTWICE

// CHECK: bulkred_opt_errors.mlir:[[# @LINE + 4]]:{{[0-9]+}}
// CHECK: Operation ptx.no_such_op is not registered
// CHECK-NOT: Traceback
func.func @unknown() {
  "ptx.no_such_op"() : () -> ()
  func.return
}

// PASS: {{^}}bulkred-opt: error: unknown pass 'no-such-pass' (bulkred passes: check-target, lower-tile-reductions, {{.*}})
// PASS-NOT: Traceback
// TARGET: {{^}}bulkred-opt: error: check-target: 'target' must look like sm_90, sm_90a or sm_100a, got 'sm_9x'
// TARGET-NOT: Traceback
// MISSING: bulkred-opt: error: {{.*}}does-not-exist.mlir
// MISSING-NOT: Traceback
// NEAR: {{^}}bulkred-opt: error: unknown pass 'lower-tile-reduction' (did you mean 'lower-tile-reductions'? bulkred passes:
// NEAR-NOT: Traceback
// PTWICE: {{^}}bulkred-opt: error: -p given twice ('lower-tile-reductions' and 'lower-to-ptx'); give it once (passes in one pipeline are separated by commas)
// PTWICE-NOT: {{.}}
// TTWICE: {{^}}bulkred-opt: error: -t given twice ('mlir' and 'ptx'); give it once
// TTWICE-NOT: {{.}}
