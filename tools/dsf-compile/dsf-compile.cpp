//===- dsf-compile.cpp - the dsf compiler driver ---------------------------===//
//
//   dsf-compile MODEL... [--schedule=S] [--emit=dsf|import] [--report=...] [-o FILE]
//   dsf-compile MODEL --target=cpu|cuda -o model.dsfa
//   dsf-compile MODEL --target=cuda --emit=ptx [-o FILE]
//
// MODEL is a directory holding config.json, or the file itself. Several
// models import into one module; with --report=kv their global KV per token
// is compared. The default pipeline (passes/Pipelines.cpp) runs after import;
// --print-pipeline shows it, --mlir-print-ir-after-all and the other
// mlir-opt pass-manager flags apply. Without --emit, the reports are printed
// (the main job). --target=cpu lowers the model for the host, --target=cuda
// for an NVIDIA GPU (sm_90a: kernels compiled by ptxas, launched by host
// code), and either writes an artifact (runtime/include/dsf/artifact.h) for
// dsf-run.
//
//===----------------------------------------------------------------------===//
#include "lowering/CPU/HostCodegen.h"
#include "lowering/CPU/Manifest.h"
#include "lowering/CUDA/TiledKernels.h"   // parseTileMath: the kernels' own list of --tile-math values
#include "lowering/Passes.h"
#include "models/import/GraphBuilder.h"
#include "models/import/ModelConfig.h"
#include "passes/Schedule.h"
#include "passes/Pipelines.h"
#include "passes/Reports.h"
#include "passes/ScheduleReport.h"
#include "tools/RegisterAll.h"

#include "mlir/IR/AsmState.h"
#include "llvm/Support/FileSystem.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/TargetParser/Host.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace {
cl::OptionCategory dsfCategory("dsf-compile options");
cl::list<std::string> models(cl::Positional, cl::OneOrMore,
                             cl::desc("<model dir or config.json>..."), cl::cat(dsfCategory));
cl::opt<std::string> schedule("schedule", cl::desc("Override the layer schedule, e.g. "
                                                   "'S S (F R R R R R)*3 | (F R R R) (X R R R)*4'"),
                              cl::value_desc("schedule"), cl::cat(dsfCategory));
cl::opt<std::string> emit("emit",
                          cl::desc("What to print: dsf (after the pipeline), import (before it), ptx (with --target=cuda: the "
                                   "kernels), llvm (with --target: the host code in the LLVM dialect, as it goes "
                                   "to LLVM)"),
                          cl::value_desc("kind"), cl::cat(dsfCategory));
cl::opt<bool> printPipeline("print-pipeline", cl::desc("Print the pass pipeline and exit"), cl::cat(dsfCategory));
cl::opt<bool> noKvQuant("no-kv-quant", cl::desc("Store every cache in f32 (dsf-quantize-kv off=true)"), cl::cat(dsfCategory));
cl::opt<double> kvBudget("kv-budget",
                         cl::desc("Let dsf-schedule-csa2 choose a schedule within this many "
                                  "global-KV bytes per token"),
                         cl::init(0), cl::cat(dsfCategory));
cl::opt<int64_t> maxIndexSources("max-index-sources",
                                 cl::desc("With --kv-budget: at most this many index sources"),
                                 cl::init(0), cl::cat(dsfCategory));
cl::opt<int64_t> poolBlocks("candidate-blocks",
                            cl::desc("Candidate-pool blocks (0: the config's; -1: no pool)"),
                            cl::init(0), cl::cat(dsfCategory));
cl::opt<std::string> prefillMode("prefill",
                                 cl::desc("Prefill entry point: full, exact-tail or bounded-replay"),
                                 cl::init("full"), cl::cat(dsfCategory));
cl::opt<bool> noFuseMhc("no-fuse-mhc", cl::desc("Leave the mHC sites unfused"), cl::cat(dsfCategory));
cl::opt<int64_t> poolBlockSize("candidate-block-size",
                               cl::desc("Candidate-pool block size (0: the config's)"), cl::init(0), cl::cat(dsfCategory));
cl::list<std::string> reports("report", cl::CommaSeparated,
                              cl::desc("Reports to print: kv, params, tiers, indexer, schedule, mhc, flops "
                                       "(default when nothing is emitted: kv and params)"), cl::cat(dsfCategory));
cl::opt<std::string> reportFormat("report-format",
                                  cl::desc("text, or svg for --report=schedule"),
                                  cl::init("text"), cl::cat(dsfCategory));
cl::opt<std::string> target("target", cl::desc("Compile for a target and write an artifact: cpu or cuda"),
                            cl::value_desc("target"), cl::cat(dsfCategory));
cl::opt<std::string> hostCpu("host-cpu", cl::desc("--target=cpu: LLVM CPU name (default x86-64-v2; "
                                                  "'native' for this machine's)"),
                             cl::init("x86-64-v2"), cl::cat(dsfCategory));
cl::opt<long> topkThresholdFrom("topk-threshold-from",
                                cl::desc("Entries from which the indexer's top-k runs as a threshold search instead of "
                                         "ranking every candidate against every other (0: always; the same selection)"),
                                cl::init(256), cl::cat(dsfCategory));
cl::opt<std::string> weightStorage("weight-storage",
                                   cl::desc("--target: how weights are kept: declared (a weight the model declares "
                                            "bf16 stays bf16, widened as the kernels read it; the default), f32, or "
                                            "released (declared, but the routed experts' MXFP4 and the projections' "
                                            "FP8 weights stay the checkpoint's codes and scales, decoded as the "
                                            "products read them: less than half the bytes bound and read "
                                            "a decode step)"),
                                   cl::init("declared"), cl::cat(dsfCategory));
cl::opt<bool> batchInvariant("batch-invariant",
                             cl::desc("--target=cuda: every projection sums in one order whatever the number of rows, "
                                      "so a decode equals its prefill bit for bit (slower decode)"),
                             cl::cat(dsfCategory));
cl::opt<std::string> tileMath("tile-math",
                              cl::desc("--target=cuda: the tiled products' arithmetic: f32 (SIMT cores, the default), "
                                       "tf32, 3xtf32 or bf16 (tensor cores, mma.sync; 3xtf32 about f32's accuracy; "
                                       "bf16 rounds the activations to bf16, f32 accumulation)"),
                              cl::init("f32"), cl::cat(dsfCategory));
// The kernel choices' defaults are lowering/Passes.h's (the passes' too);
// each flag's description names its default from there.
const std::string tileMinBlocksHelp =
    "--target=cuda: a product of 16-127 rows runs the warp kernel when its tiles would be fewer than this "
    "(default " + std::to_string(mlir::dsf::kDefaultTileMinBlocks) + ", half the H200's SMs; 0: tiles from 16 rows)";
cl::opt<long> tileMinBlocks("tile-min-blocks", cl::desc(tileMinBlocksHelp), cl::init(mlir::dsf::kDefaultTileMinBlocks),
                            cl::cat(dsfCategory));
const std::string tileMinRowsPerExpertHelp =
    "--target=cuda: the routed experts run as tiles from this many rows an expert on average (default " +
    std::to_string(mlir::dsf::kDefaultTileMinRowsPerExpert) + ", 0 with --tile-math=bf16), below as a warp per output";
cl::opt<long> tileMinRowsPerExpert("tile-min-rows-per-expert", cl::desc(tileMinRowsPerExpertHelp),
                                   cl::init(mlir::dsf::kDefaultTileMinRowsPerExpert), cl::cat(dsfCategory));
const std::string tileWideMinRowsPerExpertHelp =
    "--target=cuda: the routed experts' products of 2,048 columns or more run as 128 x 128 tiles from this many "
    "rows an expert on average, below as 64 x 64 ones (default " +
    std::to_string(mlir::dsf::kDefaultTileWideMinRowsPerExpert) + "; 0: always 128 x 128)";
cl::opt<long> tileWideMinRowsPerExpert("tile-wide-min-rows-per-expert", cl::desc(tileWideMinRowsPerExpertHelp),
                                       cl::init(mlir::dsf::kDefaultTileWideMinRowsPerExpert), cl::cat(dsfCategory));
const std::string tileSplitMinRowsHelp =
    "--target=cuda with --tile-math=bf16: a product of this many to 127 rows that the tiles do not take runs as "
    "bf16 tiles with its depth split across blocks, not the warp kernel (default " +
    std::to_string(mlir::dsf::kDefaultTileSplitMinRows) + "; 0: never)";
cl::opt<long> tileSplitMinRows("tile-split-min-rows", cl::desc(tileSplitMinRowsHelp),
                               cl::init(mlir::dsf::kDefaultTileSplitMinRows), cl::cat(dsfCategory));
cl::opt<long> attentionMmaMinTokens("attention-mma-min-tokens",
                                    cl::desc("--target=cuda: a call of this many tokens or more runs its sink "
                                             "attention on the tensor cores (bf16 operands, f32 sums; a block per "
                                             "token and group of heads), fewer on the SIMT kernels (f32); 0: never. "
                                             "Default 16 with --tile-math=bf16, else 0"),
                                    cl::init(0), cl::cat(dsfCategory));
const std::string attentionSplitBelowBlocksHelp =
    "--target=cuda: a tensor-core attention call of fewer blocks (tokens x groups of heads) than this splits its "
    "columns across blocks, ceil(this / blocks) parts at most, merged by a second kernel (flash-decoding: a "
    "decode's one query a sequence is otherwise a block a sequence); 0: never. Default " +
    std::to_string(mlir::dsf::kDefaultAttentionSplitBelowBlocks) + ": a batched step of fewer sequences splits";
cl::opt<long> attentionSplitBelowBlocks("attention-split-below-blocks", cl::desc(attentionSplitBelowBlocksHelp),
                                        cl::init(mlir::dsf::kDefaultAttentionSplitBelowBlocks),
                                        cl::cat(dsfCategory));
cl::opt<long> attentionMmaMinBatch("attention-mma-min-batch",
                                   cl::desc("--target=cuda: a batched decode step of this many sequences or more "
                                            "runs its sink attention on the tensor cores (the sequences' columns "
                                            "gathered in bf16, a block per sequence and group of heads), smaller "
                                            "steps on the SIMT kernels; 0: never. Default 1 with --tile-math=bf16 "
                                            "(bench/results/gpu-batch-attention-mma.md), else 0"),
                                   cl::init(0), cl::cat(dsfCategory));
cl::opt<bool> noCpAsync("no-cp-async",
                        cl::desc("--target=cuda --tile-math=bf16: stage the tiles' operands through registers "
                                 "rather than copying them by cp.async into a ring of shared-memory stages"),
                        cl::cat(dsfCategory));
cl::opt<bool> bf16Copies("bf16-copies",
                         cl::desc("--target=cuda --tile-math=bf16: the cp.async tiles stage an f32 A from a bf16 "
                                  "copy made before them rather than rounding it in each column tile (the same "
                                  "sums either way; off by default: bench/results/gpu-narrow-expert-tiles.md)"),
                         cl::cat(dsfCategory));
cl::opt<bool> noProgrammaticLaunch(
    "no-programmatic-launch",
    cl::desc("--target=cuda: leave out the wait for the kernel before that every kernel begins with, so that the "
             "runtime launches each only after the one before has completed (by default a kernel's launch "
             "overlaps the end of the one before: programmatic dependent launch, sm_90)"),
    cl::cat(dsfCategory));
cl::opt<std::string> launchDependents(
    "launch-dependents",
    cl::desc("--target=cuda: when a kernel lets the next one be scheduled: at-entry (right after its wait) or "
             "at-exit (as its blocks exit)"),
    cl::init("at-entry"), cl::cat(dsfCategory));
cl::opt<bool> noBatchDecode("no-batch-decode",
                            cl::desc("--target: leave out @batch_decode (one decode step for a batch of sequences, "
                                     "their state in slots updated in place; about a quarter of the compile time)"),
                            cl::cat(dsfCategory));
cl::opt<long> pageTokens("page-tokens",
                         cl::desc("--target: tokens a page of @batch_decode's caches covers (default 64, the "
                                  "prefix store's block)"),
                         cl::init(64), cl::cat(dsfCategory));
cl::opt<bool> f32Pages("f32-pages",
                       cl::desc("--target: @batch_decode's cache pages hold f32 values rather than their format's "
                                "packed rows (FP8, MXFP4, NVFP4: the codes and a scale byte a block, decoded as read)"),
                       cl::cat(dsfCategory));
cl::opt<std::string> cudaToolkit("cuda-toolkit", cl::desc("--target=cuda: the CUDA toolkit whose ptxas compiles the kernels"),
                                 cl::init("/usr/local/cuda"), cl::cat(dsfCategory));
cl::opt<std::string> output("o", cl::desc("Output file (default: stdout)"),
                            cl::value_desc("file"), cl::init("-"), cl::cat(dsfCategory));

int error(const Twine &msg) {
  WithColor::error(errs(), "dsf-compile") << msg << "\n";
  return 1;
}
/// What `print` writes, into the -o file (kept once it is written) or stdout.
int writeOutput(llvm::function_ref<void(raw_ostream &)> print) {
  std::string errorMessage;
  auto out = mlir::openOutputFile(output, &errorMessage);
  if (!out)
    return error(errorMessage);
  print(out->os());
  out->keep();
  return 0;
}
/// Lowers the (single) model in `module` for the host and writes the artifact.
int compileArtifact(mlir::ModuleOp module, const dsf::ModelConfig &config,
                    const mlir::dsf::PipelineOptions &pipelineOptions) {
  // First the state a sequence keeps between calls (and @replay): the
  // manifest describes its slots.
  mlir::PassManager threading(module.getContext());
  if (failed(mlir::applyPassManagerCLOptions(threading)) ||
      failed(mlir::parsePassPipeline(noBatchDecode ? "dsf-thread-state" : "dsf-thread-state,dsf-batch-decode",
                                     threading)))
    return error("bad pass-manager options");
  if (failed(threading.run(module)))
    return error("threading the sequence state failed (diagnostics above)");
  auto models = module.getBody()->getOps<mlir::dsf::ModelOp>();
  mlir::dsf::ModelFacts facts = mlir::dsf::collectModelFacts(*models.begin());
  ::dsf::rt::Manifest manifest;
  manifest.model = facts.model;
  manifest.family = facts.family;
  bool cuda = target == "cuda";
  manifest.target = cuda ? "cuda-sm_90a" : "cpu-x86_64";
  manifest.vocabSize = facts.vocabSize;
  manifest.maxPositions = config.maxPositions > 0 ? config.maxPositions : (int64_t(1) << 31) - 1;
  manifest.prefillMode = pipelineOptions.prefill;
  manifest.kvQuant = pipelineOptions.kvQuant;
  manifest.cachePlan = facts.cachePlan;
  manifest.state = facts.state;

  mlir::MLIRContext *context = module.getContext();
  errs() << "dsf-compile: lowering " << facts.model << (cuda ? " for CUDA (sm_90a)" : " for the CPU") << "\n";
  mlir::PassManager toLinalg(context);
  if (failed(mlir::applyPassManagerCLOptions(toLinalg)) ||
      failed(mlir::parsePassPipeline("dsf-to-linalg{topk-threshold-from=" + std::to_string(topkThresholdFrom) +
                                         " weight-storage=" + weightStorage +
                                         " page-tokens=" + std::to_string(pageTokens) +
                                         " packed-pages=" + (f32Pages ? "false" : "true") + "}",
                                     toLinalg)))
    return error("bad pass-manager options");
  if (failed(toLinalg.run(module)))
    return error("lowering to linalg failed (diagnostics above)");
  std::string message;
  if (failed(mlir::dsf::describeEntryPoints(module, facts, manifest.entryPoints, message)))
    return error(message);
  mlir::PassManager toLlvm(context);
  mlir::dsf::CudaPipelineOptions cudaOptions;
  cudaOptions.toolkit = cudaToolkit;
  cudaOptions.emitPtx = emit == "ptx";
  cudaOptions.batchInvariant = batchInvariant;
  cudaOptions.tileMath = tileMath;
  cudaOptions.tileMinBlocks = tileMinBlocks;
  // The tensor cores' tiles beat a warp per output even at a batch of 8's
  // 6 rows an expert (bench/results/gpu-split-depth.md: the routed experts
  // 3.12 -> 2.21 ms a step over 5 layers); the SIMT tiles lose there.
  cudaOptions.tileMinRowsPerExpert = tileMinRowsPerExpert.getNumOccurrences() ? long(tileMinRowsPerExpert)
                                                                               : (tileMath == "bf16" ? 0 : 32);
  cudaOptions.tileWideMinRowsPerExpert = tileWideMinRowsPerExpert;
  cudaOptions.tileSplitMinRows = tileSplitMinRows;
  cudaOptions.tileCpAsync = !noCpAsync;
  cudaOptions.tileBf16Copies = bf16Copies;
  cudaOptions.programmaticLaunch = !noProgrammaticLaunch;
  cudaOptions.launchDependentsAtEntry = launchDependents == "at-entry";
  // A bf16 build's prefill attention is bf16 too (its activations are); the
  // f32-family builds keep f32 attention unless asked.
  cudaOptions.attentionMmaMinTokens =
      attentionMmaMinTokens.getNumOccurrences() ? long(attentionMmaMinTokens) : (tileMath == "bf16" ? 16 : 0);
  cudaOptions.attentionMmaMinBatch =
      attentionMmaMinBatch.getNumOccurrences() ? long(attentionMmaMinBatch) : (tileMath == "bf16" ? 1 : 0);
  cudaOptions.attentionSplitBelowBlocks = attentionSplitBelowBlocks;
  if (cuda && !cudaOptions.emitPtx && !llvm::sys::fs::exists(cudaToolkit + "/bin/ptxas"))
    return error("--target=cuda: no ptxas in " + cudaToolkit + "/bin (give the toolkit with --cuda-toolkit)");
  if (failed(mlir::applyPassManagerCLOptions(toLlvm)) ||
      failed(cuda ? mlir::dsf::buildCudaPipelineFromLinalg(toLlvm, cudaOptions)
                  : mlir::dsf::buildCpuPipelineFromLinalg(toLlvm)))
    return error("bad pass-manager options");
  if (failed(toLlvm.run(module)))
    return error("lowering to LLVM failed (diagnostics above)");
  if (emit == "llvm")
    // What buildHostLibrary translates: reproducibility and codegen
    // questions start here.
    return writeOutput([&](raw_ostream &os) { module.print(os); });
  if (cudaOptions.emitPtx)
    // Each kernel's module, as the NVPTX backend wrote it.
    return writeOutput([&](raw_ostream &os) {
      module.walk([&](mlir::gpu::BinaryOp binary) {
        for (mlir::Attribute a : binary.getObjects())
          if (auto object = llvm::dyn_cast<mlir::gpu::ObjectAttr>(a))
            os << "// ----- kernel module " << binary.getSymName() << "\n" << object.getObject().getValue() << "\n";
      });
    });

  errs() << "dsf-compile: generating host code\n";
  std::vector<std::string> entries;
  for (const ::dsf::rt::EntryPoint &e : manifest.entryPoints)
    entries.push_back(e.name);
  mlir::dsf::HostCodegenOptions codegen;
  codegen.cpu = hostCpu == "native" ? llvm::sys::getHostCPUName().str() : hostCpu;
  std::string so;
  if (failed(mlir::dsf::buildHostLibrary(module, entries, codegen, so, message)))
    return error(message);
  std::vector<::dsf::rt::Section> sections{{::dsf::rt::SectionKind::Manifest, ::dsf::rt::manifestToJson(manifest)},
                                           {::dsf::rt::SectionKind::HostKernels, std::move(so)}};
  if (!::dsf::rt::writeArtifact(output, sections, message))
    return error(message);
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  // The passes first: --mlir-print-ir-before=PASS and the like take their
  // values from the passes registered when those options are made.
  dsf::registerAllPasses();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  // --help lists dsf-compile's own options; LLVM's and MLIR's stay usable
  // (--help-hidden lists them).
  cl::HideUnrelatedOptions(dsfCategory);
  cl::ParseCommandLineOptions(argc, argv, "dsf: the DeepSeek-V4-family compiler\n");

  bool wantKv = false, wantParams = false, wantTiers = false, wantIndexer = false,
       wantSchedule = false, wantMhc = false, wantFlops = false;
  for (const std::string &r : reports) {
    if (r == "kv")
      wantKv = true;
    else if (r == "params")
      wantParams = true;
    else if (r == "tiers")
      wantTiers = true;
    else if (r == "indexer")
      wantIndexer = true;
    else if (r == "schedule")
      wantSchedule = true;
    else if (r == "mhc")
      wantMhc = true;
    else if (r == "flops")
      wantFlops = true;
    else
      return error("--report: unknown report '" + r +
                   "' (expected kv, params, tiers, indexer, schedule, mhc or flops)");
  }
  if (reportFormat != "text" && reportFormat != "svg")
    return error("--report-format: unknown format '" + reportFormat + "' (expected text or svg)");
  if (reportFormat == "svg" && (!wantSchedule || reports.size() != 1 || models.size() != 1))
    return error("--report-format=svg draws one model's --report=schedule, alone");
  if (!emit.empty() && emit != "dsf" && emit != "import" && emit != "ptx" && emit != "llvm")
    return error("--emit: unknown kind '" + emit + "' (expected dsf, import, ptx or llvm)");
  if (emit == "llvm" && target.empty())
    return error("--emit=llvm prints the host code of --target=cpu or --target=cuda");
  if (emit == "ptx" && target != "cuda")
    return error("--emit=ptx prints the kernels of --target=cuda");
  if (weightStorage != "declared" && weightStorage != "f32" && weightStorage != "released")
    return error("--weight-storage: expected declared, f32 or released, not '" + weightStorage + "'");
  if (pageTokens < 1)
    return error("--page-tokens: expected a count of tokens >= 1, not " + std::to_string(pageTokens));
  if (topkThresholdFrom < 0)
    return error("--topk-threshold-from: expected a count of entries >= 0, not " + std::to_string(topkThresholdFrom));
  if (batchInvariant && target != "cuda")
    return error("--batch-invariant chooses the kernels of --target=cuda (the CPU's sum in one order already)");
  if (!mlir::dsf::parseTileMath(tileMath))
    return error("--tile-math: unknown arithmetic '" + tileMath + "' (expected f32, tf32, 3xtf32 or bf16)");
  if (tileMath != "f32" && target != "cuda")
    return error("--tile-math chooses the kernels of --target=cuda");
  if (tileMinBlocks < 0)
    return error("--tile-min-blocks: expected a count of blocks >= 0, not " + std::to_string(tileMinBlocks));
  if (tileMinRowsPerExpert < 0)
    return error("--tile-min-rows-per-expert: expected a count of rows >= 0, not " +
                 std::to_string(tileMinRowsPerExpert));
  if (tileWideMinRowsPerExpert < 0)
    return error("--tile-wide-min-rows-per-expert: expected a count of rows >= 0 (0: always 128 x 128), not " +
                 std::to_string(tileWideMinRowsPerExpert));
  if ((tileMinBlocks.getNumOccurrences() || tileMinRowsPerExpert.getNumOccurrences() ||
       tileWideMinRowsPerExpert.getNumOccurrences()) &&
      target != "cuda")
    return error("--tile-min-blocks, --tile-min-rows-per-expert and --tile-wide-min-rows-per-expert choose the "
                 "kernels of --target=cuda");
  if (tileSplitMinRows < 0)
    return error("--tile-split-min-rows: expected a count of rows >= 0 (0: never), not " +
                 std::to_string(tileSplitMinRows));
  if (tileSplitMinRows.getNumOccurrences() && (tileMath != "bf16" || target != "cuda" || noCpAsync))
    return error("--tile-split-min-rows chooses the split-depth bf16 tiles, staged by cp.async: it needs "
                 "--target=cuda --tile-math=bf16 without --no-cp-async");
  if (attentionMmaMinTokens < 0)
    return error("--attention-mma-min-tokens: expected a count of tokens >= 0 (0: never), not " +
                 std::to_string(attentionMmaMinTokens));
  if (attentionMmaMinTokens.getNumOccurrences() && target != "cuda")
    return error("--attention-mma-min-tokens chooses the attention kernels of --target=cuda");
  if (attentionMmaMinBatch < 0)
    return error("--attention-mma-min-batch: expected a count of sequences >= 0 (0: never), not " +
                 std::to_string(attentionMmaMinBatch));
  if (attentionMmaMinBatch.getNumOccurrences() && target != "cuda")
    return error("--attention-mma-min-batch chooses the attention kernels of --target=cuda");
  if (attentionSplitBelowBlocks < 0)
    return error("--attention-split-below-blocks: expected a count of blocks >= 0 (0: never), not " +
                 std::to_string(attentionSplitBelowBlocks));
  if (attentionSplitBelowBlocks.getNumOccurrences() && target != "cuda")
    return error("--attention-split-below-blocks chooses the attention kernels of --target=cuda");
  if (noCpAsync && tileMath != "bf16")
    return error("--no-cp-async chooses how the bf16 tiles are staged: it needs --target=cuda --tile-math=bf16");
  if (launchDependents != "at-entry" && launchDependents != "at-exit")
    return error("--launch-dependents: expected at-entry or at-exit, not '" + launchDependents + "'");
  if (noProgrammaticLaunch && target != "cuda")
    return error("--no-programmatic-launch chooses how the kernels of --target=cuda are launched");
  if (launchDependents.getNumOccurrences() && target != "cuda")
    return error("--launch-dependents chooses how the kernels of --target=cuda are launched");
  if (launchDependents.getNumOccurrences() && noProgrammaticLaunch)
    return error("--launch-dependents chooses when a kernel lets the next one launch: it has no meaning with "
                 "--no-programmatic-launch");
  if (bf16Copies && (tileMath != "bf16" || noCpAsync))
    return error("--bf16-copies chooses what the cp.async bf16 tiles stage: it needs --target=cuda "
                 "--tile-math=bf16 without --no-cp-async");

  mlir::dsf::PipelineOptions pipelineOptions;
  pipelineOptions.kvQuant = !noKvQuant;
  pipelineOptions.kvBudget = kvBudget;
  pipelineOptions.maxIndexSources = maxIndexSources;
  pipelineOptions.poolBlocks = poolBlocks;
  pipelineOptions.poolBlockSize = poolBlockSize;
  pipelineOptions.fuseMhc = !noFuseMhc;
  pipelineOptions.prefill = prefillMode;
  if (printPipeline) {
    mlir::OpPassManager pm(mlir::ModuleOp::getOperationName());
    mlir::dsf::buildDefaultPipeline(pm, pipelineOptions);
    pm.printAsTextualPipeline(outs());
    outs() << "\n";
    return 0;
  }
  if (!target.empty()) {
    if (target != "cpu" && target != "cuda")
      return error("--target: unknown target '" + target + "' (expected cpu or cuda)");
    if ((!emit.empty() && emit != "ptx" && emit != "llvm") || !reports.empty())
      return error("--target writes an artifact; it does not combine with --emit (but ptx or llvm) or --report");
    if (models.size() != 1)
      return error("--target compiles one model at a time");
    if (output == "-" && emit != "ptx" && emit != "llvm")
      return error("--target needs an output file (-o model.dsfa)");
  }
  if (emit.empty() && reports.empty() && target.empty())
    wantKv = wantParams = true;

  // Read and validate every config before building anything.
  std::vector<dsf::ModelConfig> configs;
  for (const std::string &path : models) {
    Expected<dsf::ModelConfig> config = dsf::loadModelConfig(path);
    if (!config)
      return error(toString(config.takeError()));
    if (!schedule.empty())
      if (Error e = dsf::applySchedule(*config, schedule))
        return error(toString(std::move(e)));
    for (const std::string &what : config->notExpressed)
      WithColor::warning(errs(), "dsf-compile") << config->source << ": " << what << "\n";
    for (const std::string &what : config->notes)
      WithColor::note(errs(), "dsf-compile") << config->source << ": " << what << "\n";
    configs.push_back(std::move(*config));
  }

  mlir::DialectRegistry registry;
  dsf::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  mlir::OpBuilder builder(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(builder.getUnknownLoc());
  builder.setInsertionPointToEnd(module->getBody());
  std::set<std::string> names;
  for (dsf::ModelConfig &config : configs) {
    // Two models from folders of the same name still need distinct symbols.
    std::string name = config.name;
    for (int k = 2; !names.insert(name).second; ++k)
      name = config.name + "_" + std::to_string(k);
    config.name = name;
    auto loc = mlir::FileLineColLoc::get(&context, config.source, 1, 1);
    dsf::buildModel(builder, loc, config);
  }
  if (failed(mlir::verify(*module)))
    return error("internal error: the imported IR does not verify (diagnostics above)");
  if (emit != "import") {
    mlir::PassManager pm(&context);
    if (failed(mlir::applyPassManagerCLOptions(pm)))
      return error("bad pass-manager options");
    mlir::dsf::buildDefaultPipeline(pm, pipelineOptions);
    if (failed(pm.run(*module)))
      return error("the pass pipeline failed (diagnostics above)");
  }

  if (!target.empty())
    return compileArtifact(*module, configs.front(), pipelineOptions);

  std::string errorMessage;
  auto out = mlir::openOutputFile(output, &errorMessage);
  if (!out)
    return error(errorMessage);
  if (!emit.empty())
    module->print(out->os());
  std::vector<mlir::dsf::KvReport> kvReports;
  std::vector<mlir::dsf::TierReport> tierReports;
  for (auto model : module->getBody()->getOps<mlir::dsf::ModelOp>()) {
    if (wantKv) {
      kvReports.push_back(mlir::dsf::computeKvReport(model));
      mlir::dsf::printKvReport(kvReports.back(), out->os());
    }
    if (wantParams)
      mlir::dsf::printParamReport(mlir::dsf::computeParamReport(model), out->os());
    if (wantTiers) {
      tierReports.push_back(mlir::dsf::computeTierReport(model));
      mlir::dsf::printTierReport(tierReports.back(), out->os());
    }
    if (wantSchedule) {
      if (reportFormat == "svg")
        mlir::dsf::printScheduleSvg(model, out->os());
      else
        mlir::dsf::printScheduleText(model, out->os());
    }
    if (wantFlops)
      mlir::dsf::printFlopsReport(mlir::dsf::computeFlopsReport(model, {4096, 65536, 1048576}),
                                  out->os());
    if (wantMhc)
      mlir::dsf::printMhcReport(mlir::dsf::computeMhcReport(model), out->os());
    if (wantIndexer)
      mlir::dsf::printIndexerReport(mlir::dsf::computeIndexerReport(model, {65536, 1048576}),
                                    out->os());
  }
  if (wantKv)
    mlir::dsf::printKvComparison(kvReports, out->os());
  if (wantTiers)
    mlir::dsf::printTierComparison(tierReports, out->os());
  out->keep();
  return 0;
}
