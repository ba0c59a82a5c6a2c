import Testing
@testable import SpinNet

@Suite struct OutputQueueTests {
    @Test func partialConsumes_KeepOrderAcrossChunks() {
        var queue = OutputQueue()
        queue.append([1, 2, 3])
        queue.append([])
        queue.append([4, 5])
        #expect(queue.count == 5)
        queue.consume(2)
        #expect(queue.first == [3])
        queue.consume(1)
        #expect(queue.first == [4, 5])
        queue.consume(2)
        #expect(queue.isEmpty)
        #expect(queue.first == nil)
    }

    @Test func manyChunks_ConsumedOneByOne_AllComeOutInOrder() {
        var queue = OutputQueue()
        for i in 0..<200 { queue.append([UInt8(i)]) }
        var out: [UInt8] = []
        while let chunk = queue.first {
            out += chunk
            queue.consume(chunk.count)
        }
        #expect(out == (0..<200).map { UInt8($0) })
    }
}
