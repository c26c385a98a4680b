// lower-to-ptx rejects what it cannot lower with a located error naming the op.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics -p lower-to-ptx | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -p lower-to-ptx 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: lower_to_ptx_invalid.mlir:[[# @LINE + 3]]:3: error: 'arith.ceildivsi' cannot be lowered to ptx (supported: func.return, memref.alloca/load/store/subview,
func.func @unsupported_op(%a: index, %b: index) {
  // CHECK: error: 'arith.ceildivsi' cannot be lowered to ptx (supported: func.return, memref.alloca/load/store/subview, arith.constant/addi/subi/muli/divui/divsi/remui/remsi/minui/minsi/maxui/maxsi/index_cast/extsi/extui/trunci/cmpi/select, arith.xori (negating a branch condition), gpu.thread_id/block_id/block_dim/grid_dim/lane_id, bulkred.cluster_rank/cluster_size, scf.for/if/while/condition/yield, cf.br/cond_br, ptx ops)
  %q = arith.ceildivsi %a, %b : index
  func.return
}

// -----

func.func @xori_i32(%a: i32, %b: i32) {
  // CHECK: error: 'arith.xori' only the negation of an i1 (arith.xori with true) is lowered, got i32
  %x = arith.xori %a, %b : i32
  func.return
}

// -----

func.func @xori_not_a_negation(%p: i1, %q: i1) {
  // CHECK: error: 'arith.xori' only the negation of an i1 (arith.xori with true) is lowered, got i1
  %x = arith.xori %p, %q : i1
  func.return
}

// -----

func.func @xori_with_false(%p: i1) {
  %false = arith.constant false
  // CHECK: error: 'arith.xori' only the negation of an i1 (arith.xori with true) is lowered, got i1
  %x = arith.xori %p, %false : i1
  func.return
}

// -----

// A negated predicate has no PTX value here: only a branch may use it.
func.func @negation_used_as_value(%p: i1, %a: i32, %b: i32) {
  %true = arith.constant true
  // CHECK: error: 'arith.xori' a negated i1 is lowered only as a branch condition, but 'arith.select' uses it
  %np = arith.xori %p, %true : i1
  %s = arith.select %np, %a, %b : i32
  func.return
}

// -----

// ... nor as a value passed along a branch (not its condition).
func.func @negation_passed_to_a_block(%p: i1) {
  %true = arith.constant true
  // CHECK: error: 'arith.xori' a negated i1 is lowered only as a branch condition, but 'cf.cond_br' uses it
  %np = arith.xori %p, %true : i1
  cf.cond_br %p, ^bb1(%np : i1), ^bb1(%p : i1)
^bb1(%v: i1):
  func.return
}

// -----

// CHECK: error: 'func.func' argument 0 must be a memref in #bulkred.scope<global> to be a kernel parameter, got memref<4xf32, #bulkred.scope<shared>>
func.func @shared_argument(%S: memref<4xf32, #bulkred.scope<shared>>) {
  func.return
}

// -----

func.func @global_alloca() {
  // CHECK: error: 'memref.alloca' can allocate only local, shared or cluster_shared buffers in a kernel, got memref<4xf32, #bulkred.scope<global>>
  %G = memref.alloca() : memref<4xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @dynamic_shape(%n: index) {
  // CHECK: error: 'memref.alloca' needs a memref with a static shape, got memref<?xf32, #bulkred.scope<local>>
  %L = memref.alloca(%n) : memref<?xf32, #bulkred.scope<local>>
  func.return
}

// -----

func.func @empty_buffer() {
  // CHECK: error: 'memref.alloca' needs at least one element, got memref<0xf32, #bulkred.scope<shared>>
  %S = memref.alloca() : memref<0xf32, #bulkred.scope<shared>>
  func.return
}

// -----

func.func @predicate_elements() {
  // CHECK: error: 'memref.alloca' element type i1 has no PTX load/store form
  %L = memref.alloca() : memref<4xi1, #bulkred.scope<local>>
  func.return
}

// -----

// CHECK: error: 'func.func' a kernel returns nothing, but this function has results
func.func @with_result(%x: i32) -> i32 {
  func.return %x : i32
}

// -----

// CHECK: error: 'func.func' argument 0 must be a memref in #bulkred.scope<global> to be a kernel parameter, got memref<4xf32>
func.func @scopeless_argument(%m: memref<4xf32>) {
  func.return
}

// -----

// CHECK: error: 'func.func' a memref block argument cannot be lowered: memref<4xf32, #bulkred.scope<global>>
func.func @memref_block_argument(%A: memref<4xf32, #bulkred.scope<global>>) {
  cf.br ^bb1(%A : memref<4xf32, #bulkred.scope<global>>)
^bb1(%B: memref<4xf32, #bulkred.scope<global>>):
  func.return
}

// -----

func.func @byte_select(%p: i1, %a: i8, %b: i8) {
  // CHECK: error: 'arith.select' select of i8 has no PTX form
  %s = arith.select %p, %a, %b : i8
  func.return
}

// -----

func.func @bool_cast(%p: i1) {
  // CHECK: error: 'arith.extui' a cast between i1 and i32 has no PTX form
  %w = arith.extui %p : i1 to i32
  func.return
}

// -----

func.func @bad_cast(%S: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: error: 'builtin.unrealized_conversion_cast' a memref<4xf32, #bulkred.scope<global>> buffer has no !ptx.ptr<shared::cta> address
  %p = builtin.unrealized_conversion_cast %S : memref<4xf32, #bulkred.scope<global>> to !ptx.ptr<shared::cta>
  func.return
}

// -----

// lower-to-ptx lowers kernels only: any other op of the module is an error (scf-to-cf
// would split the module's block around a loop).
func.func @kernel() {
  func.return
}
// CHECK: error: 'scf.while' must be inside a func.func kernel (lower-to-ptx lowers kernels only)
scf.while () : () -> () {
  %false = arith.constant false
  scf.condition(%false)
} do {
  scf.yield
}

// -----

// CHECK: error: 'arith.constant' must be inside a func.func kernel (lower-to-ptx lowers kernels only)
%c0 = arith.constant 0 : index

// -----

// CHECK: error: 'ptx.fence.proxy.async' must be inside a func.func kernel (lower-to-ptx lowers kernels only)
ptx.fence.proxy.async

// -----

// A bulkred.launch of another kind is not ignored.
// CHECK: error: 'func.func' 'bulkred.launch' must be a #bulkred.launch<grid = [..], block = [..], cluster = [..]> attribute, got 5 : i64
func.func @launch_not_a_launch() attributes {bulkred.launch = 5} {
  func.return
}

// -----

// Shared buffers past the static .shared memory ptxas allows on the target: 232448 bytes
// on sm_90a (the default), 49152 on sm_90; local buffers do not count.
// RUN: not bulkred-opt %s --split-input-file -p 'lower-to-ptx{target=sm_90}' 2>&1 | filecheck %s --check-prefix=SM90
func.func @shared_too_big() {
  %a = memref.alloca() : memref<50000xf32, #bulkred.scope<shared>>
  %l = memref.alloca() : memref<16000xf32, #bulkred.scope<local>>
  // SM90: lower_to_ptx_invalid.mlir:[[# @LINE - 2]]:3: error: 'memref.alloca' brings the kernel's shared memory to 200000 bytes, more than sm_90 allows for static .shared arrays (49152; sm_90a allows 232448)
  // STDERR: lower_to_ptx_invalid.mlir:[[# @LINE + 2]]:3: error: 'memref.alloca' brings the kernel's shared memory to 232456 bytes
  // CHECK: error: 'memref.alloca' brings the kernel's shared memory to 232456 bytes, more than sm_90a allows for static .shared arrays (232448)
  %b = memref.alloca() : memref<4057xi64, #bulkred.scope<cluster_shared>>
  func.return
}

// -----

// RUN: not bulkred-opt %s --split-input-file -p 'lower-to-ptx{target=sm_7x}' 2>&1 | filecheck %s --check-prefix=TARGET
// TARGET: 'target' must look like sm_90, sm_90a or sm_100a, got 'sm_7x'
func.func @bad_target() {
  func.return
}

// -----

func.func @subview_dynamic_size(%a: memref<64xf32, #bulkred.scope<global>>, %n: index) {
  // CHECK: error: 'memref.subview' needs static sizes and strides (only the offsets may be values)
  %v = memref.subview %a[0] [%n] [1] : memref<64xf32, #bulkred.scope<global>> to memref<?xf32, strided<[1]>, #bulkred.scope<global>>
  func.return
}

// -----

func.func @subview_rank_reducing(%a: memref<4x16xf32, #bulkred.scope<global>>, %i: index) {
  // CHECK: error: 'memref.subview' needs a subview of the source's rank 2 (no rank reduction), got memref<16xf32, strided<[1], offset: ?>, #bulkred.scope<global>>
  %v = memref.subview %a[%i, 0] [1, 16] [1, 1] : memref<4x16xf32, #bulkred.scope<global>> to memref<16xf32, strided<[1], offset: ?>, #bulkred.scope<global>>
  func.return
}

// -----

// A stride declared '?' verifies (as in MLIR; wrong static strides are a verifier error,
// tools/upstream_verifier_errors.mlir), but the lowering needs the strides static.
func.func @subview_dynamic_strides(%a: memref<4x16xf32, #bulkred.scope<global>>, %i: index) {
  // CHECK: error: 'memref.subview' result type must have shape [2, 16], strides [16, 1], the element type and memory space of memref<4x16xf32, #bulkred.scope<global>>, got memref<2x16xf32, strided<[?, 1], offset: ?>, #bulkred.scope<global>>
  %v = memref.subview %a[%i, 0] [2, 16] [1, 1] : memref<4x16xf32, #bulkred.scope<global>> to memref<2x16xf32, strided<[?, 1], offset: ?>, #bulkred.scope<global>>
  func.return
}
