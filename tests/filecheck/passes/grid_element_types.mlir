// Element types at grid scope: 64-bit accumulators (f64, i64, ui64: 16-byte vectors of
// two, a butterfly on the two 32-bit halves), a wider dst (the accumulator and output
// type: i32 into i64, f16 into f32), and the narrow and unsigned types (loaded with
// ld.s8/u8/s16/u16 into 32-bit registers, combined with .u32 for unsigned min/max).
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_90a}' | filecheck %s --check-prefix=IR
// RUN: bulkred-opt %s --split-input-file --verify-each -p 'lower-tile-reductions{target=sm_90a explain=true},legalize-for-target{target=sm_90a},lower-bulk-ops,lower-to-ptx{target=sm_90a},check-target{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=EXPLAIN,PTX

// A whole f64 sum: two f64 per 16-byte load, each shuffle moves the two halves.
// EXPLAIN:     // chosen: grid_full
// IR-LABEL:    func.func @sum_f64(
// IR:          ptx.ld.vec nc f64 {{%.*}} : !ptx.ptr<global> -> f64, f64
// IR:          ptx.add rn f64
// IR:          [[LO:%.*]], [[HI:%.*]] = ptx.mov.unpack.b32x2 {{%.*}} : f64
// IR-NEXT:     [[SLO:%.*]] = ptx.shfl.sync bfly [[LO]], {{.*}} : i32
// IR-NEXT:     [[SHI:%.*]] = ptx.shfl.sync bfly [[HI]], {{.*}} : i32
// IR-NEXT:     ptx.mov.pack.b32x2 [[SLO]], [[SHI]] : f64
// IR:          ptx.st f64
// PTX-LABEL:   .visible .entry sum_f64(
// PTX:         ld.global.nc.v2.f64 {%fd{{[0-9]+}}, %fd{{[0-9]+}}}
// PTX:         mov.b64 {%r{{[0-9]+}}, %r{{[0-9]+}}}, %fd{{[0-9]+}};
// PTX-NEXT:    shfl.sync.bfly.b32
// PTX-NEXT:    shfl.sync.bfly.b32
// PTX-NEXT:    mov.b64 %fd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}};
// PTX:         st.global.f64
func.func @sum_f64(%x: memref<1024xf64, #bulkred.scope<global>>, %y: memref<1xf64, #bulkred.scope<global>>) {
  bulkred.reduce sum grid %x, %y : memref<1024xf64, #bulkred.scope<global>>, memref<1xf64, #bulkred.scope<global>>
  func.return
}

// -----

// Row sums of int32 into int64 (torch's sum of an int32 tensor): each loaded element
// is widened once (cvt.s64.s32) and the rows accumulate in 64 bits.
// EXPLAIN:     grid_rows{{ +}}65{{ +}}dtype{{ +}}ok{{ +}}int8, {{.*}}int32 -> int64
// EXPLAIN:     // chosen: grid_rows
// IR-LABEL:    func.func @rows_i32_to_i64(
// IR:          ptx.ld.vec nc b32 {{%.*}} : !ptx.ptr<global> -> i32, i32, i32, i32
// IR-NEXT:     ptx.cvt s64 s32 {{%.*}} : i32 -> i64
// IR:          ptx.add s64
// IR:          ptx.mov.unpack.b32x2 {{%.*}} : i64
// IR:          ptx.st b64
// PTX-LABEL:   .visible .entry rows_i32_to_i64(
// PTX:         ld.global.nc.v4.b32
// PTX:         cvt.s64.s32
// PTX:         add.s64
// PTX:         st.global.b64
func.func @rows_i32_to_i64(%x: memref<8x64xi32, #bulkred.scope<global>>, %y: memref<8xi64, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %x, %y : memref<8x64xi32, #bulkred.scope<global>>, memref<8xi64, #bulkred.scope<global>>
  func.return
}

// -----

// Column sums of int32 into int64: cp.reduce.async.bulk adds in the element type, so
// grid_split_bulk declines the wider dst and grid_split_det takes it.
// EXPLAIN:     grid_split_bulk{{ +}}64{{ +}}dtype{{ +}}FAIL{{ +}}float32, int32{{ +}}int32 -> int64
// EXPLAIN:     // chosen: grid_split_det
// IR-LABEL:    func.func @columns_i32_to_i64(
// IR:          ptx.cvt s64 s32
// IR:          ptx.st b64
func.func @columns_i32_to_i64(%x: memref<64x4096xi32, #bulkred.scope<global>>, %y: memref<4096xi64, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [0 : i64] %x, %y : memref<64x4096xi32, #bulkred.scope<global>>, memref<4096xi64, #bulkred.scope<global>>
  func.return
}

// -----

// A float16 sum into float32: f32 accumulators, no rounding back to f16.
// IR-LABEL:    func.func @sum_f16_to_f32(
// IR:          ptx.ld.vec nc b16 {{%.*}} : !ptx.ptr<global> -> f16, f16, f16, f16
// IR-NEXT:     ptx.cvt f32 f16
// IR-NOT:      ptx.cvt rn f16 f32
// IR:          ptx.st f32
// PTX-LABEL:   .visible .entry sum_f16_to_f32(
// PTX-NOT:     cvt.rn.f16.f32
// PTX:         st.global.f32
func.func @sum_f16_to_f32(%x: memref<4096xf16, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid %x, %y : memref<4096xf16, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// Column max of uint8: 4-byte vectors of u8, zero-extended into 32-bit registers by the
// load; unsigned max; each result stored as one byte.
// EXPLAIN:     // chosen: grid_split_det
// IR-LABEL:    func.func @columns_max_ui8(
// IR:          ptx.ld.vec nc u8 {{%.*}} : !ptx.ptr<global> -> i32, i32, i32, i32
// IR:          ptx.max u32
// IR:          ptx.st b8
// PTX-LABEL:   .visible .entry columns_max_ui8(
// PTX:         ld.global.nc.v4.u8 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}
// PTX:         max.u32
// PTX:         st.global.b8
func.func @columns_max_ui8(%x: memref<64x8xui8, #bulkred.scope<global>>, %y: memref<8xui8, #bulkred.scope<global>>) {
  bulkred.reduce max grid axes [0 : i64] %x, %y : memref<64x8xui8, #bulkred.scope<global>>, memref<8xui8, #bulkred.scope<global>>
  func.return
}

// -----

// Row min of uint32: one redux.sync with .u32 per warp.
// IR-LABEL:    func.func @rows_min_ui32(
// IR:          ptx.min u32
// IR:          ptx.redux.sync min u32
// PTX-LABEL:   .visible .entry rows_min_ui32(
// PTX:         redux.sync.min.u32
func.func @rows_min_ui32(%x: memref<8x64xui32, #bulkred.scope<global>>, %y: memref<8xui32, #bulkred.scope<global>>) {
  bulkred.reduce min grid axes [1 : i64] %x, %y : memref<8x64xui32, #bulkred.scope<global>>, memref<8xui32, #bulkred.scope<global>>
  func.return
}

// -----

// A whole int8 sum into int64: ld.s8 sign-extends into 32 bits, one cvt.s64.s32 widens.
// IR-LABEL:    func.func @sum_i8_to_i64(
// IR:          ptx.ld.vec nc s8 {{%.*}} : !ptx.ptr<global> -> i32, i32, i32, i32
// IR-NEXT:     ptx.cvt s64 s32
// IR:          ptx.add s64
// PTX-LABEL:   .visible .entry sum_i8_to_i64(
// PTX:         ld.global.nc.v4.s8
// PTX:         cvt.s64.s32
// PTX:         st.global.b64
func.func @sum_i8_to_i64(%x: memref<4096xi8, #bulkred.scope<global>>, %y: memref<1xi64, #bulkred.scope<global>>) {
  bulkred.reduce sum grid %x, %y : memref<4096xi8, #bulkred.scope<global>>, memref<1xi64, #bulkred.scope<global>>
  func.return
}

// -----

// xor of uint64 rows: b64 logic, two shuffles per step.
// IR-LABEL:    func.func @rows_xor_ui64(
// IR:          ptx.ld.vec nc b64 {{%.*}} : !ptx.ptr<global> -> i64, i64
// IR:          ptx.xor b64
// IR:          ptx.mov.unpack.b32x2 {{%.*}} : i64
// PTX-LABEL:   .visible .entry rows_xor_ui64(
// PTX:         ld.global.nc.v2.b64
// PTX:         xor.b64
func.func @rows_xor_ui64(%x: memref<8x64xui64, #bulkred.scope<global>>, %y: memref<8xui64, #bulkred.scope<global>>) {
  bulkred.reduce xor grid axes [1 : i64] %x, %y : memref<8x64xui64, #bulkred.scope<global>>, memref<8xui64, #bulkred.scope<global>>
  func.return
}
