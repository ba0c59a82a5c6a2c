import SpinServer
import SpinExamples
print("spin-server: not written yet")
