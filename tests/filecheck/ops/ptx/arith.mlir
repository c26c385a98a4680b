// Custom and generic syntax of every op in arith.py: add/sub/mul/mul.lo/div/rem/min/max over their
// '.type' x '.rnd' x '.ftz' variants (and min/max '.NaN'), and/or/xor/shl/shr, max3/min3 with '.ftz'/'.NaN',
// add.f32x2, mov.pack/unpack; and the target each needs.
// RUN: bulkred-opt %s --split-input-file | filecheck %s
// RUN: bulkred-opt %s --split-input-file --print-op-generic | bulkred-opt --split-input-file | filecheck %s
// RUN: bulkred-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: bulkred-opt %s --split-input-file -p 'check-target{target=sm_100a}' | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -p 'check-target{target=sm_90a}' 2>&1 >/dev/null | filecheck %s --check-prefix=SM90

// Errors of these ops are in arith_invalid.mlir.

// CHECK-LABEL: func.func @add
// GENERIC-LABEL: sym_name = "add"
func.func @add(%s16: i16, %s32: i32, %s64: i64, %h: f16, %bh: bf16, %f: f32, %d: f64) {
  // CHECK: %{{.*}} = ptx.add s32 %{{.*}}, %{{.*}} : i32
  // GENERIC: %{{.*}} = "ptx.add"(%{{.*}}, %{{.*}}) <{type = #ptx<arith_type s32>}> : (i32, i32) -> i32
  %0 = ptx.add s32 %s32, %s32 : i32
  // CHECK: ptx.add u32 %{{.*}}, %{{.*}} : i32
  %1 = ptx.add u32 %s32, %s32 : i32
  // CHECK: ptx.add s16 %{{.*}}, %{{.*}} : i16
  %2 = ptx.add s16 %s16, %s16 : i16
  // CHECK: ptx.add u16 %{{.*}}, %{{.*}} : i16
  %3 = ptx.add u16 %s16, %s16 : i16
  // CHECK: ptx.add s64 %{{.*}}, %{{.*}} : i64
  %4 = ptx.add s64 %s64, %s64 : i64
  // CHECK: ptx.add u64 %{{.*}}, %{{.*}} : i64
  %5 = ptx.add u64 %s64, %s64 : i64
  // CHECK: ptx.add f32 %{{.*}}, %{{.*}} : f32
  %6 = ptx.add f32 %f, %f : f32
  // CHECK: ptx.add rn f32
  // GENERIC: "ptx.add"(%{{.*}}, %{{.*}}) <{rnd = #ptx<rnd rn>, type = #ptx<arith_type f32>}> : (f32, f32) -> f32
  %7 = ptx.add rn f32 %f, %f : f32
  // CHECK: ptx.add rz f32
  %8 = ptx.add rz f32 %f, %f : f32
  // CHECK: ptx.add rm f32
  %9 = ptx.add rm f32 %f, %f : f32
  // CHECK: ptx.add rp f32
  %10 = ptx.add rp f32 %f, %f : f32
  // CHECK: ptx.add ftz f32
  // GENERIC: "ptx.add"(%{{.*}}, %{{.*}}) <{ftz, type = #ptx<arith_type f32>}> : (f32, f32) -> f32
  %11 = ptx.add ftz f32 %f, %f : f32
  // The qualifiers print in PTX order whatever order they are written in.
  // CHECK: ptx.add rn ftz f32 %{{.*}}, %{{.*}} : f32
  // GENERIC: "ptx.add"(%{{.*}}, %{{.*}}) <{ftz, rnd = #ptx<rnd rn>, type = #ptx<arith_type f32>}> : (f32, f32) -> f32
  %12 = ptx.add ftz rn f32 %f, %f : f32
  // CHECK: ptx.add rz f64 %{{.*}}, %{{.*}} : f64
  %13 = ptx.add rz f64 %d, %d : f64
  // CHECK: ptx.add rn ftz f16 %{{.*}}, %{{.*}} : f16
  // GENERIC: "ptx.add"(%{{.*}}, %{{.*}}) <{rnd = #ptx<rnd rn>, ftz, type = #ptx<arith_type f16>}> : (f16, f16) -> f16
  %14 = ptx.add rn ftz f16 %h, %h : f16
  // CHECK: ptx.add rn bf16 %{{.*}}, %{{.*}} : bf16
  %15 = ptx.add rn bf16 %bh, %bh : bf16
  // CHECK: ptx.add f16 %{{.*}} {tag = "kept"} : f16
  // GENERIC: "ptx.add"(%{{.*}}, %{{.*}}) <{type = #ptx<arith_type f16>}> {tag = "kept"} : (f16, f16) -> f16
  %16 = ptx.add f16 %h, %h {tag = "kept"} : f16
  func.return
}

// CHECK-LABEL: func.func @sub
// GENERIC-LABEL: sym_name = "sub"
func.func @sub(%s16: i16, %s32: i32, %s64: i64, %h: f16, %bh: bf16, %f: f32, %d: f64) {
  // CHECK: ptx.sub s32 %{{.*}}, %{{.*}} : i32
  // GENERIC: "ptx.sub"(%{{.*}}, %{{.*}}) <{type = #ptx<arith_type s32>}> : (i32, i32) -> i32
  %0 = ptx.sub s32 %s32, %s32 : i32
  // CHECK: ptx.sub u16 %{{.*}}, %{{.*}} : i16
  %1 = ptx.sub u16 %s16, %s16 : i16
  // CHECK: ptx.sub u64 %{{.*}}, %{{.*}} : i64
  %2 = ptx.sub u64 %s64, %s64 : i64
  // CHECK: ptx.sub rm ftz f32 %{{.*}}, %{{.*}} : f32
  %3 = ptx.sub rm ftz f32 %f, %f : f32
  // CHECK: ptx.sub rp f64 %{{.*}}, %{{.*}} : f64
  %4 = ptx.sub rp f64 %d, %d : f64
  // CHECK: ptx.sub ftz f16 %{{.*}}, %{{.*}} : f16
  %5 = ptx.sub ftz f16 %h, %h : f16
  // CHECK: ptx.sub rn bf16 %{{.*}}, %{{.*}} : bf16
  %6 = ptx.sub rn bf16 %bh, %bh : bf16
  func.return
}

// CHECK-LABEL: func.func @mul
// GENERIC-LABEL: sym_name = "mul"
func.func @mul(%s16: i16, %s32: i32, %s64: i64, %h: f16, %bh: bf16, %f: f32, %d: f64) {
  // CHECK: ptx.mul rz f32 %{{.*}}, %{{.*}} : f32
  // GENERIC: "ptx.mul"(%{{.*}}, %{{.*}}) <{rnd = #ptx<rnd rz>, type = #ptx<arith_type f32>}> : (f32, f32) -> f32
  %0 = ptx.mul rz f32 %f, %f : f32
  // CHECK: ptx.mul rn ftz f32
  %1 = ptx.mul rn ftz f32 %f, %f : f32
  // CHECK: ptx.mul rm f64 %{{.*}}, %{{.*}} : f64
  %2 = ptx.mul rm f64 %d, %d : f64
  // CHECK: ptx.mul ftz f16 %{{.*}}, %{{.*}} : f16
  %3 = ptx.mul ftz f16 %h, %h : f16
  // CHECK: ptx.mul bf16 %{{.*}}, %{{.*}} : bf16
  %4 = ptx.mul bf16 %bh, %bh : bf16
  // CHECK: ptx.mul.lo s32 %{{.*}}, %{{.*}} : i32
  // GENERIC: "ptx.mul.lo"(%{{.*}}, %{{.*}}) <{type = #ptx<arith_type s32>}> : (i32, i32) -> i32
  %5 = ptx.mul.lo s32 %s32, %s32 : i32
  // CHECK: ptx.mul.lo u16 %{{.*}}, %{{.*}} : i16
  %6 = ptx.mul.lo u16 %s16, %s16 : i16
  // CHECK: ptx.mul.lo u64 %{{.*}}, %{{.*}} : i64
  %7 = ptx.mul.lo u64 %s64, %s64 : i64
  func.return
}

// Integer div and rem (index arithmetic of tile loops): every integer '.type'.
// CHECK-LABEL: func.func @div_rem
// GENERIC-LABEL: sym_name = "div_rem"
func.func @div_rem(%s16: i16, %s32: i32, %s64: i64) {
  // CHECK: ptx.div u64 %{{.*}}, %{{.*}} : i64
  // GENERIC: "ptx.div"(%{{.*}}, %{{.*}}) <{type = #ptx<arith_type u64>}> : (i64, i64) -> i64
  %0 = ptx.div u64 %s64, %s64 : i64
  // CHECK: ptx.div s32 %{{.*}}, %{{.*}} : i32
  %1 = ptx.div s32 %s32, %s32 : i32
  // CHECK: ptx.div u16 %{{.*}}, %{{.*}} : i16
  %2 = ptx.div u16 %s16, %s16 : i16
  // CHECK: ptx.rem u64 %{{.*}}, %{{.*}} : i64
  // GENERIC: "ptx.rem"(%{{.*}}, %{{.*}}) <{type = #ptx<arith_type u64>}> : (i64, i64) -> i64
  %3 = ptx.rem u64 %s64, %s64 : i64
  // CHECK: ptx.rem s64 %{{.*}}, %{{.*}} : i64
  %4 = ptx.rem s64 %s64, %s64 : i64
  // CHECK: ptx.rem u32 %{{.*}}, %{{.*}} : i32
  %5 = ptx.rem u32 %s32, %s32 : i32
  func.return
}

// CHECK-LABEL: func.func @min_max
// GENERIC-LABEL: sym_name = "min_max"
func.func @min_max(%s16: i16, %s32: i32, %s64: i64, %h: f16, %bh: bf16, %f: f32, %d: f64) {
  // CHECK: ptx.min s32 %{{.*}}, %{{.*}} : i32
  // GENERIC: "ptx.min"(%{{.*}}, %{{.*}}) <{type = #ptx<arith_type s32>}> : (i32, i32) -> i32
  %0 = ptx.min s32 %s32, %s32 : i32
  // CHECK: ptx.max u32 %{{.*}}, %{{.*}} : i32
  %1 = ptx.max u32 %s32, %s32 : i32
  // CHECK: ptx.min u16 %{{.*}}, %{{.*}} : i16
  %2 = ptx.min u16 %s16, %s16 : i16
  // CHECK: ptx.max s64 %{{.*}}, %{{.*}} : i64
  %3 = ptx.max s64 %s64, %s64 : i64
  // CHECK: ptx.min ftz f32 %{{.*}}, %{{.*}} : f32
  // GENERIC: "ptx.min"(%{{.*}}, %{{.*}}) <{ftz, type = #ptx<arith_type f32>}> : (f32, f32) -> f32
  %4 = ptx.min ftz f32 %f, %f : f32
  // CHECK: ptx.max f32 %{{.*}}, %{{.*}} : f32
  %5 = ptx.max f32 %f, %f : f32
  // CHECK: ptx.max f64 %{{.*}}, %{{.*}} : f64
  %6 = ptx.max f64 %d, %d : f64
  // CHECK: ptx.max ftz f16 %{{.*}}, %{{.*}} : f16
  %7 = ptx.max ftz f16 %h, %h : f16
  // CHECK: ptx.min bf16 %{{.*}}, %{{.*}} : bf16
  %8 = ptx.min bf16 %bh, %bh : bf16
  // '.NaN' (f16, bf16, f32; sm_80): a NaN input gives the canonical NaN.
  // CHECK: ptx.max NaN f32 %{{.*}}, %{{.*}} : f32
  // GENERIC: "ptx.max"(%{{.*}}, %{{.*}}) <{NaN, type = #ptx<arith_type f32>}> : (f32, f32) -> f32
  %9 = ptx.max NaN f32 %f, %f : f32
  // CHECK: ptx.min ftz NaN f32 %{{.*}}, %{{.*}} : f32
  %10 = ptx.min ftz NaN f32 %f, %f : f32
  // CHECK: ptx.max NaN f16 %{{.*}}, %{{.*}} : f16
  %11 = ptx.max NaN f16 %h, %h : f16
  // CHECK: ptx.min NaN bf16 %{{.*}}, %{{.*}} : bf16
  %12 = ptx.min NaN bf16 %bh, %bh : bf16
  func.return
}

// CHECK-LABEL: func.func @bitwise
// GENERIC-LABEL: sym_name = "bitwise"
func.func @bitwise(%s16: i16, %s32: i32, %s64: i64) {
  // CHECK: ptx.and b32 %{{.*}}, %{{.*}} : i32, i32
  // GENERIC: "ptx.and"(%{{.*}}, %{{.*}}) <{type = #ptx<arith_type b32>}> : (i32, i32) -> i32
  %0 = ptx.and b32 %s32, %s32 : i32, i32
  // CHECK: ptx.and b16 %{{.*}}, %{{.*}} : i16, i16
  %1 = ptx.and b16 %s16, %s16 : i16, i16
  // CHECK: ptx.or b64 %{{.*}}, %{{.*}} : i64, i64
  // GENERIC: "ptx.or"(%{{.*}}, %{{.*}}) <{type = #ptx<arith_type b64>}> : (i64, i64) -> i64
  %2 = ptx.or b64 %s64, %s64 : i64, i64
  // CHECK: ptx.xor b32 %{{.*}}, %{{.*}} : i32, i32
  // GENERIC: "ptx.xor"(%{{.*}}, %{{.*}}) <{type = #ptx<arith_type b32>}> : (i32, i32) -> i32
  %3 = ptx.xor b32 %s32, %s32 : i32, i32
  // The shift amount is a u32 register whatever '.type' is.
  // CHECK: ptx.shl b64 %{{.*}}, %{{.*}} : i64, i32
  // GENERIC: "ptx.shl"(%{{.*}}, %{{.*}}) <{type = #ptx<arith_type b64>}> : (i64, i32) -> i64
  %4 = ptx.shl b64 %s64, %s32 : i64, i32
  // CHECK: ptx.shl b16 %{{.*}}, %{{.*}} : i16, i32
  %5 = ptx.shl b16 %s16, %s32 : i16, i32
  // CHECK: ptx.shr b32 %{{.*}}, %{{.*}} : i32, i32
  // GENERIC: "ptx.shr"(%{{.*}}, %{{.*}}) <{type = #ptx<arith_type b32>}> : (i32, i32) -> i32
  %6 = ptx.shr b32 %s32, %s32 : i32, i32
  // shr also takes the integer types: arithmetic for s, logical for u.
  // CHECK: ptx.shr s32 %{{.*}}, %{{.*}} : i32, i32
  %7 = ptx.shr s32 %s32, %s32 : i32, i32
  // CHECK: ptx.shr u64 %{{.*}}, %{{.*}} : i64, i32
  %8 = ptx.shr u64 %s64, %s32 : i64, i32
  // CHECK: ptx.shr s16 %{{.*}}, %{{.*}} : i16, i32
  %9 = ptx.shr s16 %s16, %s32 : i16, i32
  func.return
}

// CHECK-LABEL: func.func @pack
// GENERIC-LABEL: sym_name = "pack"
func.func @pack(%lo: f32, %hi: f32) {
  // CHECK: %[[P:.*]] = ptx.mov.pack %{{.*}}, %{{.*}} : vector<2xf32>
  // GENERIC: %[[P:.*]] = "ptx.mov.pack"(%{{.*}}, %{{.*}}) : (f32, f32) -> vector<2xf32>
  %p = ptx.mov.pack %lo, %hi : vector<2xf32>
  // CHECK: %{{.*}}, %{{.*}} = ptx.mov.unpack %[[P]] : vector<2xf32>
  // GENERIC: %{{.*}}, %{{.*}} = "ptx.mov.unpack"(%[[P]]) : (vector<2xf32>) -> (f32, f32)
  %l, %h = ptx.mov.unpack %p : vector<2xf32>
  func.return
}

// -----

// max3 / min3 need sm_100 and PTX ISA 8.8.
// CHECK-LABEL: func.func @max3_min3
// GENERIC-LABEL: sym_name = "max3_min3"
func.func @max3_min3(%a: f32, %b: f32, %c: f32) {
  // SM90: arith.mlir:[[# @LINE + 3]]:3: error: 'ptx.max3' 'max.f32' needs sm_100 and PTX ISA 8.8, but the target is sm_90a
  // CHECK: %{{.*}} = ptx.max3 %{{.*}}, %{{.*}}, %{{.*}} : f32
  // GENERIC: %{{.*}} = "ptx.max3"(%{{.*}}, %{{.*}}, %{{.*}}) : (f32, f32, f32) -> f32
  %0 = ptx.max3 %a, %b, %c : f32
  // CHECK: ptx.max3 ftz %{{.*}}, %{{.*}}, %{{.*}} : f32
  // GENERIC: "ptx.max3"(%{{.*}}, %{{.*}}, %{{.*}}) <{ftz}> : (f32, f32, f32) -> f32
  %1 = ptx.max3 ftz %a, %b, %c : f32
  // CHECK: ptx.max3 NaN %{{.*}}, %{{.*}}, %{{.*}} : f32
  // GENERIC: "ptx.max3"(%{{.*}}, %{{.*}}, %{{.*}}) <{NaN}> : (f32, f32, f32) -> f32
  %2 = ptx.max3 NaN %a, %b, %c : f32
  // CHECK: ptx.max3 ftz NaN %{{.*}}, %{{.*}}, %{{.*}} : f32
  // GENERIC: "ptx.max3"(%{{.*}}, %{{.*}}, %{{.*}}) <{ftz, NaN}> : (f32, f32, f32) -> f32
  %3 = ptx.max3 ftz NaN %a, %b, %c : f32
  // CHECK: ptx.min3 %{{.*}}, %{{.*}}, %{{.*}} : f32
  // GENERIC: "ptx.min3"(%{{.*}}, %{{.*}}, %{{.*}}) : (f32, f32, f32) -> f32
  %4 = ptx.min3 %a, %b, %c : f32
  // CHECK: ptx.min3 ftz %{{.*}}, %{{.*}}, %{{.*}} : f32
  %5 = ptx.min3 ftz %a, %b, %c : f32
  // CHECK: ptx.min3 NaN %{{.*}}, %{{.*}}, %{{.*}} : f32
  %6 = ptx.min3 NaN %a, %b, %c : f32
  // CHECK: ptx.min3 ftz NaN %{{.*}}, %{{.*}}, %{{.*}} : f32
  // GENERIC: "ptx.min3"(%{{.*}}, %{{.*}}, %{{.*}}) <{ftz, NaN}> : (f32, f32, f32) -> f32
  %7 = ptx.min3 ftz NaN %a, %b, %c : f32
  func.return
}

// -----

// min3 alone, for its own target error.
// CHECK-LABEL: func.func @min3_target
func.func @min3_target(%a: f32) {
  // SM90: arith.mlir:[[# @LINE + 2]]:3: error: 'ptx.min3' 'min.ftz.NaN.f32' needs sm_100 and PTX ISA 8.8, but the target is sm_90a
  // CHECK: ptx.min3 ftz NaN
  %0 = ptx.min3 ftz NaN %a, %a, %a : f32
  func.return
}

// -----

// add.f32x2 needs sm_100 and PTX ISA 8.6.
// CHECK-LABEL: func.func @add_f32x2
// GENERIC-LABEL: sym_name = "add_f32x2"
func.func @add_f32x2(%a: vector<2xf32>, %b: vector<2xf32>) {
  // SM90: arith.mlir:[[# @LINE + 3]]:3: error: 'ptx.add.f32x2' 'add.rn.ftz.f32x2' needs sm_100 and PTX ISA 8.6, but the target is sm_90a
  // CHECK: %{{.*}} = ptx.add.f32x2 rn ftz %{{.*}}, %{{.*}} : vector<2xf32>
  // GENERIC: %{{.*}} = "ptx.add.f32x2"(%{{.*}}, %{{.*}}) <{rnd = #ptx<rnd rn>, ftz}> : (vector<2xf32>, vector<2xf32>) -> vector<2xf32>
  %0 = ptx.add.f32x2 rn ftz %a, %b : vector<2xf32>
  // CHECK: ptx.add.f32x2 %{{.*}}, %{{.*}} : vector<2xf32>
  // GENERIC: "ptx.add.f32x2"(%{{.*}}, %{{.*}}) : (vector<2xf32>, vector<2xf32>) -> vector<2xf32>
  %1 = ptx.add.f32x2 %a, %b : vector<2xf32>
  // CHECK: ptx.add.f32x2 rz %{{.*}}, %{{.*}} : vector<2xf32>
  %2 = ptx.add.f32x2 rz %a, %b : vector<2xf32>
  // CHECK: ptx.add.f32x2 rm ftz %{{.*}}, %{{.*}} : vector<2xf32>
  %3 = ptx.add.f32x2 rm ftz %a, %b : vector<2xf32>
  // CHECK: ptx.add.f32x2 rp %{{.*}}, %{{.*}} : vector<2xf32>
  %4 = ptx.add.f32x2 rp %a, %b : vector<2xf32>
  // CHECK: ptx.add.f32x2 ftz %{{.*}}, %{{.*}} : vector<2xf32>
  // GENERIC: "ptx.add.f32x2"(%{{.*}}, %{{.*}}) <{ftz}> : (vector<2xf32>, vector<2xf32>) -> vector<2xf32>
  %5 = ptx.add.f32x2 ftz %a, %b : vector<2xf32>
  func.return
}

// -----

// The two .b32 halves of a .b64 register (i64 or f64): mov.b64 {lo, hi}, d and back.
// CHECK-LABEL: func.func @pack_b32x2
// GENERIC-LABEL: sym_name = "pack_b32x2"
func.func @pack_b32x2(%lo: i32, %hi: i32) {
  // CHECK: %[[D:.*]] = ptx.mov.pack.b32x2 %{{.*}}, %{{.*}} : f64
  // GENERIC: %[[D:.*]] = "ptx.mov.pack.b32x2"(%{{.*}}, %{{.*}}) : (i32, i32) -> f64
  %d = ptx.mov.pack.b32x2 %lo, %hi : f64
  // CHECK: %{{.*}}, %{{.*}} = ptx.mov.unpack.b32x2 %[[D]] : f64
  // GENERIC: %{{.*}}, %{{.*}} = "ptx.mov.unpack.b32x2"(%[[D]]) : (f64) -> (i32, i32)
  %l, %h = ptx.mov.unpack.b32x2 %d : f64
  // CHECK: %[[Q:.*]] = ptx.mov.pack.b32x2 %{{.*}}, %{{.*}} : i64
  %q = ptx.mov.pack.b32x2 %lo, %hi : i64
  // CHECK: %{{.*}}, %{{.*}} = ptx.mov.unpack.b32x2 %[[Q]] : i64
  %l2, %h2 = ptx.mov.unpack.b32x2 %q : i64
  func.return
}
