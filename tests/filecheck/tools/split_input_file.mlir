// --split-input-file splits only on lines that are exactly `// -----` (trailing
// blanks allowed): a longer rule such as `// ----------` or `// -----x` stays in
// its chunk, and errors after a separator keep the file's line numbers.
// RUN: not bulkred-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not bulkred-opt %s --split-input-file 2>/dev/null | filecheck %s

// CHECK-LABEL: func.func @section_rules
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT: }
// CHECK-EMPTY:
// CHECK-NEXT: // -----
// CHECK-NEXT: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @after_blank_separator
func.func @section_rules() {
  // ---------- a section rule, not a separator
  // -----x nor this
  func.return
}

// -----

// ERR-NOT: Traceback
// ERR: split_input_file.mlir:[[# @LINE + 2]]:3: error: 'ptx.redux.sync' '.op' add is not valid with '.type' f32
func.func @after_separator(%x: f32, %m: i32) {
  %0 = ptx.redux.sync add f32 %x, %m : f32
  func.return
}

// -----   
// (the separator above ends in blanks)

func.func @after_blank_separator() {
  func.return
}

// -----

func.func @fourth_chunk(%a: i32) {
  // ERR: split_input_file.mlir:[[# @LINE + 1]]:3: error: 'ptx.max3' Expected attribute f32 but got i32
  %0 = ptx.max3 %a, %a, %a : i32
  func.return
}
// ERR-NOT: error
