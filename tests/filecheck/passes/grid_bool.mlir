// bool (i1) at grid scope: one byte in memory (0 or 1), loaded with ld.u8 into a 32-bit
// register; any and all combine with or.b32 / and.b32 (redux.sync .or/.and for a warp)
// and store with st.b8; a sum of bool widens into int64 (the wider-dst rule).
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_90a}' | filecheck %s --check-prefix=IR
// RUN: bulkred-opt %s --split-input-file --verify-each -p 'lower-tile-reductions{target=sm_90a explain=true},legalize-for-target{target=sm_90a},lower-bulk-ops,lower-to-ptx{target=sm_90a},check-target{target=sm_90a}' -t ptx | filecheck %s --check-prefixes=EXPLAIN,PTX

// Row any: 4 bytes per vector load, or of the 0/1 values, one redux.sync.or per row.
// EXPLAIN:     grid_rows{{ +}}65{{ +}}dtype{{ +}}ok{{ +}}int8, {{.*}}, bool{{ +}}bool
// EXPLAIN:     // chosen: grid_rows
// IR-LABEL:    func.func @any_rows(
// IR:          ptx.ld.vec nc u8 {{%.*}} : !ptx.ptr<global> -> i32, i32, i32, i32
// IR-NEXT:     ptx.or b32
// IR:          ptx.redux.sync or b32
// IR:          ptx.st b8
// PTX-LABEL:   .visible .entry any_rows(
// PTX:         ld.global.nc.v4.u8
// PTX-NEXT:    or.b32
// PTX:         redux.sync.or.b32
// PTX:         st.global.b8
func.func @any_rows(%x: memref<8x64xi1, #bulkred.scope<global>>, %y: memref<8xi1, #bulkred.scope<global>>) {
  bulkred.reduce any grid axes [1 : i64] %x, %y : memref<8x64xi1, #bulkred.scope<global>>, memref<8xi1, #bulkred.scope<global>>
  func.return
}

// -----

// A whole all: and of the 0/1 values, partials in 32-bit slots, the result one byte.
// EXPLAIN:     // chosen: grid_full
// IR-LABEL:    func.func @all_whole(
// IR:          ptx.ld.vec nc u8 {{%.*}} : !ptx.ptr<global> -> i32, i32, i32, i32
// IR:          ptx.and b32
// IR:          ptx.redux.sync and b32
// IR:          ptx.st b8
// PTX-LABEL:   .visible .entry all_whole(
// PTX:         ld.global.nc.v4.u8
// PTX:         and.b32
// PTX:         redux.sync.and.b32
// PTX:         st.global.b8
func.func @all_whole(%x: memref<4096xi1, #bulkred.scope<global>>, %y: memref<1xi1, #bulkred.scope<global>>) {
  bulkred.reduce all grid %x, %y : memref<4096xi1, #bulkred.scope<global>>, memref<1xi1, #bulkred.scope<global>>
  func.return
}

// -----

// The row sums of bool into int64 (numpy's and torch's count of true values): each
// loaded byte widened once (cvt.s64.u32), accumulated in 64 bits.
// EXPLAIN:     grid_rows{{ +}}65{{ +}}dtype{{ +}}ok{{ +}}int8, {{.*}}bool -> int64
// EXPLAIN:     // chosen: grid_rows
// IR-LABEL:    func.func @sum_bool_to_i64(
// IR:          ptx.ld.vec nc u8 {{%.*}} : !ptx.ptr<global> -> i32, i32, i32, i32
// IR-NEXT:     ptx.cvt s64 u32 {{%.*}} : i32 -> i64
// IR:          ptx.add s64
// IR:          ptx.st b64
// PTX-LABEL:   .visible .entry sum_bool_to_i64(
// PTX:         ld.global.nc.v4.u8
// PTX-NEXT:    cvt.s64.u32
// PTX:         add.s64
// PTX:         st.global.b64
func.func @sum_bool_to_i64(%x: memref<8x64xi1, #bulkred.scope<global>>, %y: memref<8xi64, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %x, %y : memref<8x64xi1, #bulkred.scope<global>>, memref<8xi64, #bulkred.scope<global>>
  func.return
}
