// Errors xDSL raises while building an op from its custom syntax (a declarative
// format's type constraint, an integer out of range for its type) are located at
// the op and name it, like a verifier error; input nested too deeply for the
// parser is a located error too. Exit status 1, never a traceback.
// RUN: not bulkred-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=DIAG
// RUN: python3 -c "print('func.func @deep() attributes {a = ' + '[' * 5000 + '} {}')" > %t.deep.mlir
// RUN: not bulkred-opt %t.deep.mlir 2>&1 | filecheck %s --check-prefix=DEEP
// RUN: python3 -c "print('func.func @deep() {' + ' scf.execute_region {' * 2000)" > %t.regions.mlir
// RUN: not bulkred-opt %t.regions.mlir 2>&1 | filecheck %s --check-prefix=DEEP

// CHECK-NOT: Traceback
// CHECK: parse_errors.mlir:[[# @LINE + 2]]:3: error: 'ptx.max3' Expected attribute f32 but got i32
func.func @max3_i32(%a: i32) {
  %0 = ptx.max3 %a, %a, %a : i32
  func.return
}

// -----

// CHECK: parse_errors.mlir:[[# @LINE + 2]]:3: error: 'ptx.mov.pack' Expected attribute vector<2xf32> but got f32
func.func @pack_f32(%a: f32) {
  %0 = ptx.mov.pack %a, %a : f32
  func.return
}

// -----

// CHECK: parse_errors.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' i32 should be of base attribute memref
func.func @reduce_scalars(%a: i32, %b: i32) {
  bulkred.reduce sum thread %a, %b : i32, i32
  func.return
}

// -----

// An op nested in a region is located at its own line and column.
func.func @constant_range() {
  scf.execute_region {
    // CHECK: parse_errors.mlir:[[# @LINE + 1]]:5: error: 'arith.constant' Integer value 99999999999999999999 is out of range for type i64
    %0 = arith.constant 99999999999999999999 : i64
    scf.yield
  }
  func.return
}
// CHECK-NOT: Traceback

// DIAG: parse_errors.mlir:{{[0-9]+}}:3: error: 'ptx.max3' Expected attribute f32 but got i32
// DIAG: parse_errors.mlir:{{[0-9]+}}:3: error: 'ptx.mov.pack'
// DIAG: parse_errors.mlir:{{[0-9]+}}:3: error: 'bulkred.reduce'
// DIAG: parse_errors.mlir:{{[0-9]+}}:5: error: 'arith.constant'

// DEEP-NOT: Traceback
// DEEP: {{^.*}}.mlir:1:{{[0-9]+}}: error: input nests too deeply
// DEEP-NOT: {{.}}
