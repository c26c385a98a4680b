// The fused reductions of bulkred.reduce (ops/tile/reduce.py, docs/fused.md): the kinds argmax,
// argmin, var, logsumexp, nanmean and minmax, the prologue / epilogue map lists (#bulkred.map<fn> and
// #bulkred.map<fn arg>), `correction` and the `aux` output print as they are written,
// parse back from their own output and round-trip through the generic form.
// RUN: bulkred-opt %s --split-input-file | filecheck %s
// RUN: bulkred-opt %s --split-input-file | bulkred-opt --split-input-file | filecheck %s
// RUN: bulkred-opt %s --split-input-file --print-op-generic | bulkred-opt --split-input-file | filecheck %s
// RUN: bulkred-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=GENERIC

// Each fused kind, with and without aux and correction.
// CHECK-LABEL: func.func @kinds
// CHECK:       bulkred.reduce argmax grid axes [1 : i64] %{{.*}}, %{{.*}} : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>
// CHECK:       bulkred.reduce argmax grid axes [1 : i64] %{{.*}}, %{{.*}} aux %{{.*}} : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>
// CHECK:       bulkred.reduce argmin grid %{{.*}}, %{{.*}} : memref<64x128xf32, #bulkred.scope<global>>, memref<1xi64, #bulkred.scope<global>>
// CHECK:       bulkred.reduce argmin grid axes [0 : i64] %{{.*}}, %{{.*}} aux %{{.*}} : memref<128xi32, #bulkred.scope<global>> : memref<64x128xi32, #bulkred.scope<global>>, memref<128xi64, #bulkred.scope<global>>
// CHECK:       bulkred.reduce var grid axes [1 : i64] %{{.*}}, %{{.*}} : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce var grid axes [1 : i64] correction 1 : i64 %{{.*}}, %{{.*}} aux %{{.*}} : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce var grid axes [1 : i64] correction 0 : i64 %{{.*}}, %{{.*}} : memref<64x128xbf16, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce logsumexp grid axes [1 : i64] %{{.*}}, %{{.*}} : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce logsumexp grid deterministic %{{.*}}, %{{.*}} : memref<64x128xf16, #bulkred.scope<global>>, memref<1xf16, #bulkred.scope<global>>
// GENERIC-LABEL: sym_name = "kinds"
// GENERIC:     "bulkred.reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind argmax>, scope = #bulkred<exec_scope grid>, axes = [1 : i64]}>
// GENERIC:     "bulkred.reduce"(%{{.*}}, %{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind argmax>, scope = #bulkred<exec_scope grid>, axes = [1 : i64]}> : (memref<64x128xf32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>) -> ()
// GENERIC:     "bulkred.reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind argmin>, scope = #bulkred<exec_scope grid>}>
// GENERIC:     "bulkred.reduce"(%{{.*}}, %{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind argmin>, scope = #bulkred<exec_scope grid>, axes = [0 : i64]}>
// GENERIC:     "bulkred.reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind var>, scope = #bulkred<exec_scope grid>, axes = [1 : i64]}>
// GENERIC:     "bulkred.reduce"(%{{.*}}, %{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind var>, scope = #bulkred<exec_scope grid>, axes = [1 : i64], correction = 1 : i64}>
// GENERIC:     "bulkred.reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind var>, scope = #bulkred<exec_scope grid>, axes = [1 : i64], correction = 0 : i64}>
// GENERIC:     "bulkred.reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind logsumexp>, scope = #bulkred<exec_scope grid>, axes = [1 : i64]}>
// GENERIC:     "bulkred.reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind logsumexp>, scope = #bulkred<exec_scope grid>, deterministic}>
func.func @kinds(%x: memref<64x128xf32, #bulkred.scope<global>>, %i: memref<64xi64, #bulkred.scope<global>>,
                 %v: memref<64xf32, #bulkred.scope<global>>, %m: memref<64xf32, #bulkred.scope<global>>,
                 %i1: memref<1xi64, #bulkred.scope<global>>,
                 %xi: memref<64x128xi32, #bulkred.scope<global>>, %ic: memref<128xi64, #bulkred.scope<global>>,
                 %vi: memref<128xi32, #bulkred.scope<global>>,
                 %xb: memref<64x128xbf16, #bulkred.scope<global>>,
                 %xh: memref<64x128xf16, #bulkred.scope<global>>, %h1: memref<1xf16, #bulkred.scope<global>>) {
  bulkred.reduce argmax grid axes [1 : i64] %x, %i : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>
  bulkred.reduce argmax grid axes [1 : i64] %x, %i aux %v : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>
  bulkred.reduce argmin grid %x, %i1 : memref<64x128xf32, #bulkred.scope<global>>, memref<1xi64, #bulkred.scope<global>>
  bulkred.reduce argmin grid axes [0 : i64] %xi, %ic aux %vi : memref<128xi32, #bulkred.scope<global>> : memref<64x128xi32, #bulkred.scope<global>>, memref<128xi64, #bulkred.scope<global>>
  bulkred.reduce var grid axes [1 : i64] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  bulkred.reduce var grid axes [1 : i64] correction 1 : i64 %x, %v aux %m : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  bulkred.reduce var grid axes [1 : i64] correction 0 : i64 %xb, %v : memref<64x128xbf16, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  bulkred.reduce logsumexp grid axes [1 : i64] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  bulkred.reduce logsumexp grid deterministic %xh, %h1 : memref<64x128xf16, #bulkred.scope<global>>, memref<1xf16, #bulkred.scope<global>>
  func.return
}

// -----

// Every map: the prologue ones (cast, abs, square, pow p, scale s) and the epilogue ones
// (div_count, sqrt, log, pow p, scale s); an argument prints as a float.
// CHECK-LABEL: func.func @maps
// CHECK:       bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<square>] epilogue [#bulkred.map<sqrt>] %{{.*}}, %{{.*}} : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce max grid prologue [#bulkred.map<abs>] %{{.*}}, %{{.*}} : memref<64x128xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<cast>, #bulkred.map<pow 3.0>] epilogue [#bulkred.map<pow 0.3333333333333333>] %{{.*}}, %{{.*}}
// CHECK:       bulkred.reduce sum grid axes [0 : i64] prologue [#bulkred.map<scale 0.5>] epilogue [#bulkred.map<div_count>, #bulkred.map<log>, #bulkred.map<scale -2.0>] %{{.*}}, %{{.*}} : memref<64x128xf32, #bulkred.scope<global>>, memref<128xf32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<cast>] epilogue [#bulkred.map<div_count>] %{{.*}}, %{{.*}} : memref<64x128xbf16, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<abs>, #bulkred.map<square>] %{{.*}}, %{{.*}} : memref<64x128xi32, #bulkred.scope<global>>, memref<64xi32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce var grid axes [1 : i64] epilogue [#bulkred.map<sqrt>] correction 1 : i64 %{{.*}}, %{{.*}}
// CHECK:       bulkred.reduce argmax grid axes [1 : i64] prologue [#bulkred.map<abs>] %{{.*}}, %{{.*}}
// GENERIC-LABEL: sym_name = "maps"
// GENERIC:     prologue = [#bulkred.map<square>], epilogue = [#bulkred.map<sqrt>]
// GENERIC:     prologue = [#bulkred.map<abs>]
// GENERIC:     prologue = [#bulkred.map<cast>, #bulkred.map<pow 3.0>], epilogue = [#bulkred.map<pow 0.3333333333333333>]
// GENERIC:     prologue = [#bulkred.map<scale 0.5>], epilogue = [#bulkred.map<div_count>, #bulkred.map<log>, #bulkred.map<scale -2.0>]
// GENERIC:     prologue = [#bulkred.map<cast>], epilogue = [#bulkred.map<div_count>]
// GENERIC:     prologue = [#bulkred.map<abs>, #bulkred.map<square>]
// GENERIC:     epilogue = [#bulkred.map<sqrt>], correction = 1 : i64
func.func @maps(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>,
                %s: memref<1xf32, #bulkred.scope<global>>, %c: memref<128xf32, #bulkred.scope<global>>,
                %xb: memref<64x128xbf16, #bulkred.scope<global>>,
                %xi: memref<64x128xi32, #bulkred.scope<global>>, %vi: memref<64xi32, #bulkred.scope<global>>,
                %i: memref<64xi64, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<square>] epilogue [#bulkred.map<sqrt>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  bulkred.reduce max grid prologue [#bulkred.map<abs>] %x, %s : memref<64x128xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<cast>, #bulkred.map<pow 3>] epilogue [#bulkred.map<pow 0.3333333333333333>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  bulkred.reduce sum grid axes [0 : i64] prologue [#bulkred.map<scale 0.5>] epilogue [#bulkred.map<div_count>, #bulkred.map<log>, #bulkred.map<scale -2.0>] %x, %c : memref<64x128xf32, #bulkred.scope<global>>, memref<128xf32, #bulkred.scope<global>>
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<cast>] epilogue [#bulkred.map<div_count>] %xb, %v : memref<64x128xbf16, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<abs>, #bulkred.map<square>] %xi, %vi : memref<64x128xi32, #bulkred.scope<global>>, memref<64xi32, #bulkred.scope<global>>
  bulkred.reduce var grid axes [1 : i64] epilogue [#bulkred.map<sqrt>] correction 1 : i64 %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  bulkred.reduce argmax grid axes [1 : i64] prologue [#bulkred.map<abs>] %x, %i : memref<64x128xf32, #bulkred.scope<global>>, memref<64xi64, #bulkred.scope<global>>
  func.return
}

// -----

// The NaN-aware reductions: nansum (sum with the prologue map nan_zero), nanmean (the
// kind nanmean, with an epilogue and a wider dst) and aminmax (the kind minmax: dst the
// minimum, aux the maximum, any element type).
// CHECK-LABEL: func.func @nan_kinds
// CHECK:       bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<nan_zero>] %{{.*}}, %{{.*}} : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce sum grid prologue [#bulkred.map<cast>, #bulkred.map<nan_zero>, #bulkred.map<square>] %{{.*}}, %{{.*}} : memref<64x128xbf16, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce nanmean grid axes [1 : i64] %{{.*}}, %{{.*}} : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce nanmean grid epilogue [#bulkred.map<sqrt>] %{{.*}}, %{{.*}} : memref<64x128xbf16, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce minmax grid axes [1 : i64] %{{.*}}, %{{.*}} aux %{{.*}} : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
// CHECK:       bulkred.reduce minmax grid axes [0 : i64] %{{.*}}, %{{.*}} aux %{{.*}} : memref<128xi32, #bulkred.scope<global>> : memref<64x128xi32, #bulkred.scope<global>>, memref<128xi32, #bulkred.scope<global>>
// GENERIC-LABEL: sym_name = "nan_kinds"
// GENERIC:     "bulkred.reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind sum>, scope = #bulkred<exec_scope grid>, axes = [1 : i64], prologue = [#bulkred.map<nan_zero>]}>
// GENERIC:     prologue = [#bulkred.map<cast>, #bulkred.map<nan_zero>, #bulkred.map<square>]
// GENERIC:     "bulkred.reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind nanmean>, scope = #bulkred<exec_scope grid>, axes = [1 : i64]}>
// GENERIC:     <{kind = #bulkred<reduce_kind nanmean>, scope = #bulkred<exec_scope grid>, epilogue = [#bulkred.map<sqrt>]}>
// GENERIC:     "bulkred.reduce"(%{{.*}}, %{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind minmax>, scope = #bulkred<exec_scope grid>, axes = [1 : i64]}>
// GENERIC:     "bulkred.reduce"(%{{.*}}, %{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind minmax>, scope = #bulkred<exec_scope grid>, axes = [0 : i64]}>
func.func @nan_kinds(%x: memref<64x128xf32, #bulkred.scope<global>>, %v: memref<64xf32, #bulkred.scope<global>>,
                     %w: memref<64xf32, #bulkred.scope<global>>, %s: memref<1xf32, #bulkred.scope<global>>,
                     %xb: memref<64x128xbf16, #bulkred.scope<global>>,
                     %xi: memref<64x128xi32, #bulkred.scope<global>>, %lo: memref<128xi32, #bulkred.scope<global>>,
                     %hi: memref<128xi32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<nan_zero>] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  bulkred.reduce sum grid prologue [#bulkred.map<cast>, #bulkred.map<nan_zero>, #bulkred.map<square>] %xb, %s : memref<64x128xbf16, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  bulkred.reduce nanmean grid axes [1 : i64] %x, %v : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  bulkred.reduce nanmean grid epilogue [#bulkred.map<sqrt>] %xb, %s : memref<64x128xbf16, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  bulkred.reduce minmax grid axes [1 : i64] %x, %v aux %w : memref<64xf32, #bulkred.scope<global>> : memref<64x128xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  bulkred.reduce minmax grid axes [0 : i64] %xi, %lo aux %hi : memref<128xi32, #bulkred.scope<global>> : memref<64x128xi32, #bulkred.scope<global>>, memref<128xi32, #bulkred.scope<global>>
  func.return
}
