// As mlir-opt: with --split-input-file an empty chunk -- after a trailing `// -----`,
// between two separators, or holding only comments -- is an empty module, not an
// error; so is an empty input file. A stray token is still a located error.
// RUN: bulkred-opt %s --split-input-file | filecheck %s
// RUN: bulkred-opt %s --split-input-file -p bulkred-to-ptx -t ptx | filecheck %s --check-prefix=PTX
// RUN: printf '' > %t.empty.mlir
// RUN: bulkred-opt %t.empty.mlir | filecheck %s --check-prefix=EMPTY
// RUN: printf '// only a comment\n' > %t.comment.mlir
// RUN: bulkred-opt --split-input-file < %t.comment.mlir | filecheck %s --check-prefix=EMPTY
// RUN: printf 'func.func @f() {\n  func.return\n}\n}\n' > %t.stray.mlir
// RUN: not bulkred-opt %t.stray.mlir 2>&1 | filecheck %s --check-prefix=STRAY

// CHECK-LABEL: func.func @first
// CHECK:       // -----
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:  }
// CHECK-EMPTY:
// CHECK-NEXT:  // -----
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:  }
// CHECK-EMPTY:
// CHECK-NEXT:  // -----
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:    func.func @last
// CHECK:       // -----
// CHECK-NEXT:  builtin.module {
// CHECK-NEXT:  }
// CHECK-NOT:   {{.}}

// PTX-COUNT-5: .address_size 64
// PTX-NOT:     .address_size

// EMPTY:      {{^}}builtin.module {
// EMPTY-NEXT: {{^}}}
// EMPTY-NOT:  {{.}}

// STRAY: {{.*}}stray.mlir:4:1: error: expected an operation, got '}'
// STRAY-NOT: Traceback
func.func @first() {
  func.return
}

// -----

// -----
// a chunk of comments only

// -----

func.func @last() {
  func.return
}

// -----
