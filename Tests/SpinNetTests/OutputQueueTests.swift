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

extension OutputQueueTests {
    @Test func gather_CopiesAcrossChunks_WithoutConsuming_ThenConsumeSpansChunks() {
        var queue = OutputQueue()
        queue.append([1, 2, 3])
        queue.append([4, 5])
        queue.append([6, 7, 8, 9])
        queue.consume(1)
        #expect(queue.hasSeveralChunks)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 6, alignment: 1)
        defer { buffer.deallocate() }
        #expect(queue.gather(into: buffer) == 6)
        #expect(Array(buffer) == [2, 3, 4, 5, 6, 7])
        #expect(queue.count == 8)
        queue.consume(5)  // 2 3 | 4 5 | 6
        #expect(queue.first == [7, 8, 9])
        #expect(!queue.hasSeveralChunks)
        queue.consume(3)
        #expect(queue.isEmpty)
    }

    @Test func aChunkPartlySent_ThenAnother_KeepsItsOffset_AndADrainedQueueStartsOver() {
        var queue = OutputQueue()
        queue.append([1, 2, 3])
        queue.consume(1)
        queue.append([4, 5])
        #expect(queue.first == [2, 3])
        #expect(queue.hasSeveralChunks)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 1)
        defer { buffer.deallocate() }
        #expect(queue.gather(into: buffer) == 4)
        #expect(Array(buffer[0..<4]) == [2, 3, 4, 5])
        queue.consume(3)
        #expect(queue.first == [5])
        queue.consume(1)
        #expect(queue.isEmpty && queue.first == nil)
        queue.append([6])
        #expect(queue.first == [6] && !queue.hasSeveralChunks && queue.count == 1)
    }
}

