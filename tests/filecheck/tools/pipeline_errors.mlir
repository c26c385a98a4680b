// A malformed -p/-t spec, an option of the wrong type, an option given twice or an
// unknown target is one line `bulkred-opt: error: ...` (naming the spec and the
// column, or the pass, the option, what it takes and what was given) with exit
// status 1, before any input is read; never a Python traceback. One case per kind
// of error here; tests/test_target_and_cli.py runs the rest in-process.

// RUN: not bulkred-opt %s -p 'lower-tile-reductions{target=sm_100a' 2>&1 | filecheck %s --check-prefix=UNCLOSED
// UNCLOSED-NOT: Traceback
// UNCLOSED: {{^}}bulkred-opt: error: pass pipeline 'lower-tile-reductions{target=sm_100a' column 37: malformed pass arguments, expected either a space or `}` here
// UNCLOSED-NOT: {{.}}

// RUN: not bulkred-opt %s -p 'a,,b' 2>&1 | filecheck %s --check-prefix=EMPTY2
// EMPTY2-NOT: Traceback
// EMPTY2: {{^}}bulkred-opt: error: pass pipeline 'a,,b' column 3: expected pass name here
// EMPTY2-NOT: {{.}}

// RUN: not bulkred-opt %s -t 'ptx{target=sm_90a' 2>&1 | filecheck %s --check-prefix=TUNCLOSED
// TUNCLOSED-NOT: Traceback
// TUNCLOSED: {{^}}bulkred-opt: error: output target 'ptx{target=sm_90a' column 18: malformed pass arguments{{.*}}
// TUNCLOSED-NOT: {{.}}

// RUN: not bulkred-opt %s -p 'lower-tile-reductions{explain=maybe}' 2>&1 | filecheck %s --check-prefix=BOOL
// BOOL-NOT: Traceback
// BOOL: {{^}}bulkred-opt: error: 'explain' of lower-tile-reductions must be true or false, got 'maybe'
// BOOL-NOT: {{.}}

// RUN: not bulkred-opt %s -p 'lower-tile-reductions{target=90}' 2>&1 | filecheck %s --check-prefix=NUMTARGET
// NUMTARGET-NOT: Traceback
// NUMTARGET: {{^}}bulkred-opt: error: 'target' of lower-tile-reductions must be a target name such as sm_90a, got 90
// NUMTARGET-NOT: {{.}}

// RUN: not bulkred-opt %s -t 'ptx{assemble=yes}' 2>&1 | filecheck %s --check-prefix=TBOOL
// TBOOL: {{^}}bulkred-opt: error: 'assemble' of output target ptx must be true or false, got 'yes'
// TBOOL-NOT: {{.}}

// RUN: not bulkred-opt %s -p 'lower-tile-reductions{nope=1}' 2>&1 | filecheck %s --check-prefix=UNKNOWNOPT
// UNKNOWNOPT: {{^}}bulkred-opt: error: 'nope' is not an option of lower-tile-reductions (options: target, explain)
// UNKNOWNOPT-NOT: {{.}}

// RUN: not bulkred-opt %s -p 'lower-tile-reductions{target=sm_100a target=sm_90a}' 2>&1 | filecheck %s --check-prefix=TWICE
// TWICE-NOT: Traceback
// TWICE: {{^}}bulkred-opt: error: pass pipeline 'lower-tile-reductions{target=sm_100a target=sm_90a}' column 38: option 'target' of lower-tile-reductions is given twice
// TWICE-NOT: {{.}}

// An SM missing from the PTX ISA table has no known PTX version: refused, listing the known ones.
// RUN: not bulkred-opt %s -p 'check-target{target=sm_101a}' 2>&1 | filecheck %s --check-prefix=UNKNOWNSM
// UNKNOWNSM-NOT: Traceback
// UNKNOWNSM: {{^}}bulkred-opt: error: check-target: 'target' must be one of sm_80, sm_86, sm_87, sm_88, sm_89, sm_90, sm_90a, sm_100, sm_100a, sm_100f, sm_103, sm_103a, sm_103f, sm_110, sm_110a, sm_110f, sm_120, sm_120a, sm_120f, sm_121, sm_121a, sm_121f, got 'sm_101a'
// UNKNOWNSM-NOT: {{.}}

func.func @ok() {
  func.return
}
