//===- GpuRouteExperts.cpp - dsf-gpu-route-experts --------------------------===//
//
// dsf-to-linalg runs the MoE router after its projection in a helper per
// shape (`dsf.router`): scores sqrt(softplus(z)), the bias (bias_vl for
// image tokens), every expert ranked against every other (stable: ties by
// index), the top-k's slots, the picked scores, their sum and the weights:
// some ten kernels a layer, each a few threads' work at decode. On bufferized
// IR this pass replaces the helper's body with one kernel, a block per token:
// its threads score the experts into shared memory, rank them (each thread
// its experts against all), give each of the top-k's slots its expert with a
// shared-memory atomic max (the linalg keeps the last expert of a rank, and
// slot 0 by default: the same), and thread 0 sums the picked scores in slot
// order and writes the weights. Every value is the linalg's, in its order.
//
//===----------------------------------------------------------------------===//
#include "lowering/CUDA/TiledKernels.h"
#include "lowering/Passes.h"
#include "lowering/ScalarMath.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace mlir::dsf {
#define GEN_PASS_DEF_GPUROUTEEXPERTS
#include "lowering/Passes.h.inc"

namespace {
constexpr int64_t kThreads = 256, kMaxExperts = 4096;

struct Router {
  int64_t experts = 0, topK = 0;
  FloatAttr routedScale;
  bool bias = false, imageBias = false;
};

std::optional<Router> parseRouter(DictionaryAttr spec) {
  auto experts = spec.getAs<IntegerAttr>("experts"), topK = spec.getAs<IntegerAttr>("top_k");
  auto scale = spec.getAs<FloatAttr>("routed_scale");
  auto bias = spec.getAs<BoolAttr>("bias"), image = spec.getAs<BoolAttr>("image_bias");
  if (!experts || !topK || !scale || !bias || !image || experts.getInt() < 1 || topK.getInt() < 1 ||
      topK.getInt() > experts.getInt() || (image.getValue() && !bias.getValue()))
    return std::nullopt;
  return Router{experts.getInt(), topK.getInt(), scale, bias.getValue(), image.getValue()};
}

bool hasRouterSignature(FunctionType type, const Router &r, Builder &b) {
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<std::pair<SmallVector<int64_t>, Type>> inputs{{{dyn, r.experts}, b.getF32Type()}};
  if (r.bias)
    inputs.push_back({{r.experts}, b.getF32Type()});
  if (r.imageBias)
    inputs.append({{{r.experts}, b.getF32Type()}, {{dyn}, b.getI1Type()}});
  if (type.getNumInputs() != inputs.size() || type.getNumResults() != 2)
    return false;
  for (auto [t, expected] : llvm::zip(type.getInputs(), inputs))
    if (!isIdentityBuffer(t, expected.first, expected.second))
      return false;
  return isIdentityBuffer(type.getResult(0), {dyn, r.topK}, b.getF32Type()) &&
         isIdentityBuffer(type.getResult(1), {dyn, r.topK}, b.getI32Type());
}

struct GpuRouteExpertsPass : impl::GpuRouteExpertsBase<GpuRouteExpertsPass> {
  void rewrite(func::FuncOp helper, const Router &r) {
    MLIRContext *ctx = helper.getContext();
    // Named after the gate in profiles (dsf-name-kernels).
    Location loc = NameLoc::get(StringAttr::get(ctx, "moe_gate"), helper.getLoc());
    FunctionType type = helper.getFunctionType();
    Block &body = helper.getBody().front();
    SmallVector<Value> args(body.getArguments());
    clearBody(body);
    Value logits = args[0];
    Value bias = r.bias ? args[1] : Value();
    Value biasVl = r.imageBias ? args[2] : Value(), image = r.imageBias ? args[3] : Value();

    OpBuilder b = OpBuilder::atBlockEnd(&body);
    auto idx = [&](OpBuilder &o, int64_t v) { return arith::ConstantIndexOp::create(o, loc, v).getResult(); };
    auto f32 = [&](OpBuilder &o, double v) {
      return arith::ConstantFloatOp::create(o, loc, o.getF32Type(), APFloat(float(v))).getResult();
    };
    auto i32 = [&](OpBuilder &o, int64_t v) { return arith::ConstantIntOp::create(o, loc, v, 32).getResult(); };
    Value tokens = memref::DimOp::create(b, loc, logits, idx(b, 0));
    Value weights = memref::AllocOp::create(b, loc, llvm::cast<MemRefType>(type.getResult(0)), ValueRange{tokens});
    Value chosen = memref::AllocOp::create(b, loc, llvm::cast<MemRefType>(type.getResult(1)), ValueRange{tokens});
    auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    auto shared = [&](int64_t n, Type t) { return MemRefType::get({n}, t, MemRefLayoutAttrInterface{}, workgroup); };
    Value one = idx(b, 1);
    auto launch = gpu::LaunchOp::create(b, loc, tokens, one, one, idx(b, kThreads), one, one, nullptr, nullptr,
                                        ValueRange{},
                                        TypeRange{shared(r.experts, b.getF32Type()), shared(r.experts, b.getF32Type()),
                                                  shared(r.topK, b.getI32Type())});
    func::ReturnOp::create(b, loc, ValueRange{weights, chosen});

    OpBuilder k = OpBuilder::atBlockEnd(&launch.getBody().front());
    Value scores = launch.getWorkgroupAttributions()[0], biased = launch.getWorkgroupAttributions()[1];
    Value slots = launch.getWorkgroupAttributions()[2];
    Value tid = launch.getThreadIds().x, t = launch.getBlockIds().x;
    Value experts = idx(k, r.experts);
    // 1. Scores and biased scores, each thread its experts.
    scf::ForOp::create(k, loc, tid, experts, idx(k, kThreads), ValueRange{},
                       [&](OpBuilder &o, Location l, Value e, ValueRange) {
                         Value z = memref::LoadOp::create(o, l, logits, ValueRange{t, e});
                         Value s = lowering::sqrtSoftplus(o, l, z);
                         memref::StoreOp::create(o, l, s, scores, ValueRange{e});
                         Value v = s;
                         if (bias) {
                           Value chosenBias = memref::LoadOp::create(o, l, bias, ValueRange{e});
                           if (image)
                             chosenBias = arith::SelectOp::create(
                                 o, l, memref::LoadOp::create(o, l, image, ValueRange{t}),
                                 memref::LoadOp::create(o, l, biasVl, ValueRange{e}), chosenBias);
                           v = arith::AddFOp::create(o, l, v, chosenBias);
                         }
                         memref::StoreOp::create(o, l, v, biased, ValueRange{e});
                         scf::YieldOp::create(o, l);
                       });
    auto clear = scf::IfOp::create(k, loc, TypeRange{},
                                   arith::CmpIOp::create(k, loc, arith::CmpIPredicate::ult, tid, idx(k, r.topK)), false);
    {
      OpBuilder w = clear.getThenBodyBuilder();
      memref::StoreOp::create(w, loc, i32(w, 0), slots, ValueRange{tid});
    }
    gpu::BarrierOp::create(k, loc);
    // 2. Each expert's rank: the experts before it (a higher biased score,
    // or the same and a lower index); the top-k's slots by atomic max.
    scf::ForOp::create(
        k, loc, tid, experts, idx(k, kThreads), ValueRange{}, [&](OpBuilder &o, Location l, Value e, ValueRange) {
          Value mine = memref::LoadOp::create(o, l, biased, ValueRange{e});
          auto count = scf::ForOp::create(
              o, l, idx(o, 0), experts, idx(o, 1), ValueRange{i32(o, 0)},
              [&](OpBuilder &p, Location pl, Value other, ValueRange acc) {
                Value theirs = memref::LoadOp::create(p, pl, biased, ValueRange{other});
                Value greater = arith::CmpFOp::create(p, pl, arith::CmpFPredicate::OGT, theirs, mine);
                Value equal = arith::CmpFOp::create(p, pl, arith::CmpFPredicate::OEQ, theirs, mine);
                Value earlier = arith::CmpIOp::create(p, pl, arith::CmpIPredicate::ult, other, e);
                Value before = arith::OrIOp::create(p, pl, greater, arith::AndIOp::create(p, pl, equal, earlier));
                scf::YieldOp::create(p, pl, arith::SelectOp::create(p, pl, before,
                                                                    arith::AddIOp::create(p, pl, acc[0], i32(p, 1)), acc[0])
                                                .getResult());
              });
          Value rank = count.getResult(0);
          auto kept = scf::IfOp::create(o, l, TypeRange{},
                                        arith::CmpIOp::create(o, l, arith::CmpIPredicate::slt, rank, i32(o, r.topK)), false);
          OpBuilder w = kept.getThenBodyBuilder();
          memref::AtomicRMWOp::create(w, l, arith::AtomicRMWKind::maxs,
                                      arith::IndexCastOp::create(w, l, w.getI32Type(), e), slots,
                                      ValueRange{arith::IndexCastOp::create(w, l, w.getIndexType(), rank)});
          scf::YieldOp::create(o, l);
        });
    gpu::BarrierOp::create(k, loc);
    // 3. Thread 0: the picked scores, their sum in slot order, the weights.
    auto first = scf::IfOp::create(k, loc, TypeRange{},
                                   arith::CmpIOp::create(k, loc, arith::CmpIPredicate::eq, tid, idx(k, 0)), false);
    gpu::TerminatorOp::create(k, loc);
    OpBuilder w = first.getThenBodyBuilder();
    SmallVector<Value> picked;
    Value sum = f32(w, 0);
    for (int64_t slot = 0; slot < r.topK; ++slot) {
      Value e = memref::LoadOp::create(w, loc, slots, ValueRange{idx(w, slot)});
      memref::StoreOp::create(w, loc, e, chosen, ValueRange{t, idx(w, slot)});
      picked.push_back(
          memref::LoadOp::create(w, loc, scores, ValueRange{arith::IndexCastOp::create(w, loc, w.getIndexType(), e)}));
      sum = arith::AddFOp::create(w, loc, sum, picked.back());
    }
    Value d = arith::AddFOp::create(w, loc, sum, f32(w, 1e-20));
    Value scale = arith::ConstantOp::create(w, loc, r.routedScale);
    for (int64_t slot = 0; slot < r.topK; ++slot)
      memref::StoreOp::create(w, loc, arith::MulFOp::create(w, loc, arith::DivFOp::create(w, loc, picked[slot], d), scale),
                              weights, ValueRange{t, idx(w, slot)});
  }

  void runOnOperation() override {
    Builder builder(&getContext());
    for (auto helper : llvm::to_vector(getOperation().getOps<func::FuncOp>())) {
      auto spec = helper->getAttrOfType<DictionaryAttr>("dsf.router");
      if (!spec || helper.isExternal())
        continue;
      std::optional<Router> router = parseRouter(spec);
      if (!router || !hasRouterSignature(helper.getFunctionType(), *router, builder)) {
        helper.emitError("dsf-gpu-route-experts: a dsf.router helper that is not the bufferized (logits, [bias], "
                         "[bias_vl, image mask]) -> (weights, experts) of its experts and top_k");
        return signalPassFailure();
      }
      // Two [experts] f32 tables in shared memory: up to 4,096 experts.
      if (router->experts > kMaxExperts)
        continue;
      rewrite(helper, *router);
    }
  }
};
} // namespace
} // namespace mlir::dsf
