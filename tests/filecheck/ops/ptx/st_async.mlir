// st.async (ops/ptx/st_async.py): custom and generic syntax round trip, the PTX line
// of each form (the target it needs: st_async_invalid.mlir).
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: bulkred-opt %s -t ptx | filecheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @st_async
// GENERIC-LABEL: sym_name = "st_async"
// PTX-LABEL: .visible .entry st_async(
func.func @st_async(%rank: i32, %x: f32, %y: f32, %i: i32, %l: i64, %d: f64) {
  ptx.alloc shared @slots size 64 align 16
  ptx.alloc shared @bar size 8 align 8
  %s = ptx.mov.addr @slots : !ptx.ptr<shared::cta>
  %b = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  %a = ptx.mapa %s, %rank : !ptx.ptr<shared::cta>
  %mbar = ptx.mapa %b, %rank : !ptx.ptr<shared::cta>
  // CHECK: ptx.st.async f32 %{{.*}}, %{{.*}} mbar %{{.*}} : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f32
  // GENERIC: "ptx.st.async"(%{{.*}}, %x, %{{.*}}) <{type = #ptx<st_async_type f32>}> : (!ptx.ptr<shared::cluster>, f32, !ptx.ptr<shared::cluster>) -> ()
  // PTX: st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%r{{[0-9]+}}], %f{{[0-9]+}}, [%r{{[0-9]+}}];
  ptx.st.async f32 %a, %x mbar %mbar : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f32
  // CHECK: ptx.st.async f32 %{{.*}}, %{{.*}}, %{{.*}} mbar %{{.*}} : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f32, f32
  // PTX: st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%r{{[0-9]+}}], {%f{{[0-9]+}}, %f{{[0-9]+}}}, [%r{{[0-9]+}}];
  ptx.st.async f32 %a, %x, %y mbar %mbar : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f32, f32
  // CHECK: ptx.st.async f32 %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} mbar %{{.*}} : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f32, f32, f32, f32
  // PTX: st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%r{{[0-9]+}}], {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}}, [%r{{[0-9]+}}];
  ptx.st.async f32 %a, %x, %y, %x, %y mbar %mbar : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f32, f32, f32, f32
  // CHECK: ptx.st.async b32 %{{.*}}, %{{.*}} mbar %{{.*}} : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, i32
  // PTX: st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%r{{[0-9]+}}], %r{{[0-9]+}}, [%r{{[0-9]+}}];
  ptx.st.async b32 %a, %i mbar %mbar : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, i32
  // CHECK: ptx.st.async u64 %{{.*}}, %{{.*}}, %{{.*}} mbar %{{.*}} : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, i64, i64
  // PTX: st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.u64 [%r{{[0-9]+}}], {%rd{{[0-9]+}}, %rd{{[0-9]+}}}, [%r{{[0-9]+}}];
  ptx.st.async u64 %a, %l, %l mbar %mbar : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, i64, i64
  // CHECK: ptx.st.async f64 %{{.*}}, %{{.*}} mbar %{{.*}} : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f64
  // PTX: st.async.shared::cluster.mbarrier::complete_tx::bytes.f64 [%r{{[0-9]+}}], %fd{{[0-9]+}}, [%r{{[0-9]+}}];
  ptx.st.async f64 %a, %d mbar %mbar : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f64
  func.return
}
