// explain=true writes each chunk's dispatch tables, as `//` lines, into the output
// stream right ahead of that chunk's IR: with --split-input-file, and into the -o file
// (nothing goes to stdout then).
//
//
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{explain=true}' | filecheck %s
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{explain=true}' -o %t.out > %t.stdout
// RUN: filecheck %s < %t.out
// RUN: filecheck %s --check-prefix=EMPTY --allow-empty < %t.stdout

// EMPTY-NOT: {{.}}

// A reduction that no variant lowers: the table is printed once, into the output; the
// error is one line that points to it (the input is the FAIL-INPUT lines below).
// RUN: sed -n 's|^// FAIL-INPUT: ||p' %s > %t.fail.mlir
// RUN: not bulkred-opt %t.fail.mlir -p 'lower-tile-reductions{explain=true}' > %t.fail.out 2> %t.fail.err
// RUN: filecheck %s --check-prefix=FAILOUT < %t.fail.out
// RUN: filecheck %s --check-prefix=FAILERR < %t.fail.err
// RUN: not bulkred-opt %t.fail.mlir -p 'lower-tile-reductions{explain=true}' 2>&1 | filecheck %s --check-prefix=ONCE
// FAIL-INPUT: func.func @k(%a: memref<16xf32, #bulkred.scope<shared>>, %b: memref<1xf32, #bulkred.scope<shared>>) {
// FAIL-INPUT:   bulkred.reduce sum cta %a, %b : memref<16xf32, #bulkred.scope<shared>>, memref<1xf32, #bulkred.scope<shared>>
// FAIL-INPUT:   func.return
// FAIL-INPUT: }
// FAILOUT:      {{^}}// dispatch of 'bulkred.reduce' at {{.*}}fail.mlir:2:3 on sm_90a
// FAILOUT:      {{^}}// chosen: none
// FAILOUT-NOT:  {{.}}
// FAILERR:      {{^}}{{.*}}fail.mlir:2:3: error: 'bulkred.reduce' no lowering variant applies on sm_90a (explain=true printed the dispatch table)
// FAILERR-NOT:  {{.}}
// ONCE-COUNT-1: dispatch of 'bulkred.reduce'
// ONCE-NOT:     dispatch of 'bulkred.reduce'

// CHECK:      // dispatch of 'bulkred.reduce' at {{.*}}explain_output.mlir:[[# @LINE + 6]]:3 on sm_100a
// CHECK:      // chosen: sm100_packed
// CHECK-NEXT: builtin.module attributes {bulkred.target = "sm_100a"} {
// CHECK-NEXT:   func.func @packed
module attributes {bulkred.target = "sm_100a"} {
func.func @packed(%a: memref<16xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<16xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}
}

// -----

// Two reductions in one chunk: both tables, in source order, ahead of the chunk.
// CHECK:      // -----
// CHECK-NEXT: // dispatch of 'bulkred.reduce' at {{.*}}explain_output.mlir:[[# @LINE + 9]]:3 on sm_90a
// CHECK:      // chosen: local
// CHECK-NEXT: // dispatch of 'bulkred.reduce' at {{.*}}explain_output.mlir:[[# @LINE + 8]]:3 on sm_90a
// CHECK:      // chosen: local
// CHECK-NEXT: builtin.module attributes {bulkred.target = "sm_90a"} {
// CHECK-NEXT:   func.func @two
// CHECK-NOT:  // dispatch
module attributes {bulkred.target = "sm_90a"} {
func.func @two(%a: memref<16xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce max thread %a, %b : memref<16xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  bulkred.reduce min thread %a, %b : memref<16xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}
}

// -----

// A chunk without reductions has no table.
// CHECK:      // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @none
func.func @none() {
  func.return
}
