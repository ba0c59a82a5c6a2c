/// SpinCombine: Spins whose feedbacks are written with Combine publishers (OpenCombine on
/// Linux), the way Spin.Swift's Combine users write them. SpinCore is re-exported, so
/// `import SpinCombine` and `import OpenCombine` are all a port from `import Combine`
/// needs: `Spinner`, `Spin`, `Feedback` and `Reducer` are SpinCore's.
@_exported import SpinCore
