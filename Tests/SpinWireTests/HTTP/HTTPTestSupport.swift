import SpinTesting
import Testing
@testable import SpinWire

/// What a parser run produced, in order: every action except `.needMoreData`, then the
/// bytes handed over by `acceptUpgrade()` if it paused for an upgrade.
enum ParseOutcome: Equatable, CustomStringConvertible {
    case action(HTTPParserAction)
    case handedOver([UInt8])

    var description: String {
        switch self {
        case .action(.request(let request)): "request(\(request.method) \(request.target.raw) body: \(request.body.count) bytes)"
        case .action(let action): "\(action)"
        case .handedOver(let bytes): "handedOver(\(String(decoding: bytes, as: UTF8.self).debugDescription))"
        }
    }
}

enum HTTPTestSupport {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Feeds `pieces` one by one, draining `next()` after each, as a socket loop would.
    static func run(_ pieces: [ArraySlice<UInt8>], limits: HTTPRequestParser.Limits) -> [ParseOutcome] {
        var parser = HTTPRequestParser(limits: limits)
        var outcomes: [ParseOutcome] = []
        var stopped = false
        var paused = false
        for piece in pieces {
            parser.feed(piece)
            while !stopped {
                let action = parser.next()
                if action == .needMoreData { break }
                outcomes.append(.action(action))
                switch action {
                case .error, .finished: stopped = true
                case .pausedForUpgrade: stopped = true; paused = true
                default: break
                }
            }
        }
        if paused { outcomes.append(.handedOver(parser.acceptUpgrade())) }
        return outcomes
    }

    /// Parses `input` whole, one byte at a time and cut in two at every position (when short
    /// enough), and in random splits from a seeded generator; expects every way to give the
    /// same outcomes and returns them.
    static func parse(
        _ input: [UInt8], limits: HTTPRequestParser.Limits = .default, randomSplits: Int = 20,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [ParseOutcome] {
        let whole = run([input[...]], limits: limits)
        if input.count <= 16_384 {
            let byteByByte = run(input.indices.map { input[$0...$0] }, limits: limits)
            #expect(byteByByte == whole, "byte-at-a-time parsing differs", sourceLocation: sourceLocation)
        }
        if input.count <= 2048 {
            // Every two-piece split: the cut at each position in turn.
            for cut in 1..<max(1, input.count) {
                let split = run([input[..<cut], input[cut...]], limits: limits)
                #expect(split == whole, "split at \(cut) differs", sourceLocation: sourceLocation)
                if split != whole { break }
            }
        }
        var generator = SeededGenerator(seed: UInt64(input.count) &* 31 &+ 7)
        for _ in 0..<randomSplits {
            var pieces: [ArraySlice<UInt8>] = []
            var start = 0
            while start < input.count {
                let length = Int.random(in: 1...max(1, min(input.count - start, 64)), using: &generator)
                pieces.append(input[start..<(start + length)])
                start += length
            }
            let split = run(pieces, limits: limits)
            #expect(split == whole, "split \(pieces.map(\.count)) differs", sourceLocation: sourceLocation)
            if split != whole { break }
        }
        return whole
    }

    static func parse(_ text: String, limits: HTTPRequestParser.Limits = .default,
                      sourceLocation: SourceLocation = #_sourceLocation) -> [ParseOutcome] {
        parse(bytes(text), limits: limits, sourceLocation: sourceLocation)
    }

    /// The requests among `outcomes`.
    static func requests(_ outcomes: [ParseOutcome]) -> [HTTPRequest] {
        outcomes.compactMap { if case .action(.request(let request)) = $0 { request } else { nil } }
    }

    /// The single request `text` parses to, or nil (recording an issue) otherwise.
    static func request(_ text: String, limits: HTTPRequestParser.Limits = .default,
                        sourceLocation: SourceLocation = #_sourceLocation) -> HTTPRequest? {
        let outcomes = parse(bytes(text), limits: limits, sourceLocation: sourceLocation)
        let requests = requests(outcomes)
        #expect(requests.count == 1, "expected one request, got \(outcomes)", sourceLocation: sourceLocation)
        return requests.first
    }

    /// The error `text` is refused with, nil if it is not refused.
    static func error(_ text: String, limits: HTTPRequestParser.Limits = .default,
                      sourceLocation: SourceLocation = #_sourceLocation) -> HTTPParserError? {
        error(bytes(text), limits: limits, sourceLocation: sourceLocation)
    }

    static func error(_ input: [UInt8], limits: HTTPRequestParser.Limits = .default,
                      sourceLocation: SourceLocation = #_sourceLocation) -> HTTPParserError? {
        let outcomes = parse(input, limits: limits, sourceLocation: sourceLocation)
        guard case .action(.error(let error))? = outcomes.last else { return nil }
        return error
    }
}
