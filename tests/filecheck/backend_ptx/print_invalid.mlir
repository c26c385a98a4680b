// What the PTX printer refuses, with a located error and exit status 1.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics -t ptx | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -t ptx 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// An op that is not a ptx instruction: level-2 IR printed without lower-to-ptx.
// STDERR: print_invalid.mlir:[[# @LINE + 3]]:3: error: 'memref.alloca' cannot be printed as PTX
func.func @not_lowered() {
  // CHECK: error: 'memref.alloca' cannot be printed as PTX: it is not a ptx instruction (run lower-to-ptx first)
  %L = memref.alloca() : memref<4xf32, #bulkred.scope<local>>
  func.return
}

// -----

// CHECK: error: 'func.func' argument 0 of type memref<4xf32, #bulkred.scope<global>> cannot be a kernel parameter (valid: !ptx.ptr<global>, i16, i32, i64, f16, bf16, f32, f64) (run lower-to-ptx first)
func.func @memref_parameter(%A: memref<4xf32, #bulkred.scope<global>>) {
  func.return
}

// -----

// CHECK: error: 'func.func' argument 1 of type !ptx.ptr<shared::cta> cannot be a kernel parameter (valid: !ptx.ptr<global>, i16, i32, i64, f16, bf16, f32, f64)
func.func @shared_parameter(%x: i32, %s: !ptx.ptr<shared::cta>) {
  func.return
}

// -----

// The printer checks every op against the target first (default sm_90a).
func.func @needs_sm100(%a: vector<2xf32>) {
  // CHECK: error: 'ptx.add.f32x2' 'add.rn.ftz.f32x2' needs sm_100 and PTX ISA 8.6, but the target is sm_90a
  %s = ptx.add.f32x2 rn ftz %a, %a : vector<2xf32>
  func.return
}

// -----

// CHECK: error: 'func.func' a kernel returns nothing, but this function has results
func.func @with_result(%x: i32) -> i32 {
  func.return %x : i32
}

// -----

// CHECK: error: 'ptx.alloc' cannot be printed as PTX: a module holds only func.func kernels
ptx.alloc shared @outside size 16 align 16

// -----

// A cluster launch needs sm_90 or later.
// RUN: not bulkred-opt %s --split-input-file -t 'ptx{target=sm_80}' 2>&1 | filecheck %s --check-prefix=SM80
// SM80: error: 'func.func' a cluster launch [2, 1, 1] needs sm_90, but the target is sm_80
func.func @cluster_on_sm80() attributes {bulkred.launch = #bulkred.launch<grid = [2], block = [32], cluster = [2]>} {
  func.return
}

// -----

// RUN: not bulkred-opt %s --split-input-file -t 'ptx{target=hopper}' 2>&1 | filecheck %s --check-prefix=NAME
// NAME: 'target' must look like sm_90, sm_90a or sm_100a, got 'hopper'
func.func @empty() {
  func.return
}

// -----

// A bulkred.launch of another kind is not ignored (the kernel would print without .reqntid).
// CHECK: error: 'func.func' 'bulkred.launch' must be a #bulkred.launch<grid = [..], block = [..], cluster = [..]> attribute, got 5 : i64
func.func @launch_not_a_launch() attributes {bulkred.launch = 5} {
  func.return
}

// -----

// Static .shared arrays past what ptxas allows on the target: 232448 bytes on sm_90a,
// 49152 on sm_90.
// RUN: not bulkred-opt %s --split-input-file -t 'ptx{target=sm_90}' 2>&1 | filecheck %s --check-prefix=SM90
func.func @shared_too_big() {
  ptx.alloc shared @a size 200000 align 128
  ptx.alloc local @l size 64000 align 16
  // SM90: print_invalid.mlir:[[# @LINE - 2]]:3: error: 'ptx.alloc' brings the kernel's shared memory to 200000 bytes, more than sm_90 allows for static .shared arrays (49152; sm_90a allows 232448)
  // STDERR: print_invalid.mlir:[[# @LINE + 2]]:3: error: 'ptx.alloc' brings the kernel's shared memory to 232456 bytes
  // CHECK: error: 'ptx.alloc' brings the kernel's shared memory to 232456 bytes, more than sm_90a allows for static .shared arrays (232448)
  ptx.alloc shared @mbar size 32456 align 16
  func.return
}
