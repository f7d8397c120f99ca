import ActorStorePersistence
import Foundation

// MARK: Conformances

// `ActorStorePersistence.Value` is spelled out below: inside these extensions `Value` is
// `PredicateExpressions.Value`.

extension PredicateExpressions.Variable: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.variable(key, node: self)
    }
}

extension PredicateExpressions.KeyPath: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.member(translator.term(root), rootType: Root.Output.self, keyPath: keyPath, node: self)
    }
}

extension PredicateExpressions.Value: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .constant(PredicateTranslator.storedValue(value), value)
    }
}

extension PredicateExpressions.NilLiteral: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .constant(ActorStorePersistence.Value.null, Wrapped?.none as Any)
    }
}

extension PredicateExpressions.Conjunction: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .predicate(allOf([try translator.condition(lhs), try translator.condition(rhs)]))
    }
}

extension PredicateExpressions.Disjunction: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .predicate(anyOf([try translator.condition(lhs), try translator.condition(rhs)]))
    }
}

extension PredicateExpressions.Negation: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .predicate(negate(try translator.condition(wrapped)))
    }
}

extension PredicateExpressions.Equal: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .predicate(
            try translator.compare(translator.term(lhs), .equal, translator.term(rhs), in: self) { a, b in
                guard let a = a as? LHS.Output, let b = b as? LHS.Output else { return nil }
                return a == b
            })
    }
}

extension PredicateExpressions.NotEqual: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .predicate(
            try translator.compare(translator.term(lhs), .notEqual, translator.term(rhs), in: self) { a, b in
                guard let a = a as? LHS.Output, let b = b as? LHS.Output else { return nil }
                return a != b
            })
    }
}

extension PredicateExpressions.Comparison: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        // `if` rather than `switch`: `ComparisonOperator` may gain cases, and an unknown one must throw.
        let queryOp: QueryOperator
        if op == .lessThan {
            queryOp = .less
        } else if op == .lessThanOrEqual {
            queryOp = .lessOrEqual
        } else if op == .greaterThan {
            queryOp = .greater
        } else if op == .greaterThanOrEqual {
            queryOp = .greaterOrEqual
        } else {
            throw translator.unsupported(self, "uses an unknown comparison operator")
        }
        return .predicate(
            try translator.compare(
                translator.term(lhs), queryOp, translator.term(rhs), in: self,
                fold: comparisonFold(LHS.Output.self, queryOp)))
    }
}

extension PredicateExpressions.Conditional: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        guard If.Output.self == Bool.self else {
            throw translator.unsupported(self, "chooses between values; only a ternary of conditions translates")
        }
        let condition = try translator.condition(test)
        let whenTrue = try translator.condition(trueBranch)
        let whenFalse = try translator.condition(falseBranch)
        return .predicate(anyOf([allOf([condition, whenTrue]), allOf([negate(condition), whenFalse])]))
    }
}

extension PredicateExpressions.OptionalFlatMap: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.optionalChain(wrapped, variable: variable.key, transform: transform, node: self)
    }
}

extension PredicateExpressions.NilCoalesce: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .coalesce(try translator.term(lhs), try translator.term(rhs))
    }
}

extension PredicateExpressions.ForcedUnwrap: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        switch try translator.term(inner) {
        case .path(let path): return .path(path)
        case .optionalPredicate(let guardPath, let predicate):
            return .predicate(allOf([try translator.notNil(.path(guardPath), self), predicate]))
        default: throw translator.unsupported(self, "force-unwraps something that is not a property")
        }
    }
}

extension PredicateExpressions.SequenceContains: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        let isString = LHS.Output.self == String.self || LHS.Output.self == Substring.self
        return try translator.sequenceContains(sequence, element: element, sequenceIsString: isString, node: self)
    }
}

extension PredicateExpressions.SequenceContainsWhere: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.subqueryCondition(sequence, variable: variable.key, test: test, all: false, node: self)
    }
}

extension PredicateExpressions.SequenceAllSatisfy: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.subqueryCondition(sequence, variable: variable.key, test: test, all: true, node: self)
    }
}

extension PredicateExpressions.Filter: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.filter(sequence, variable: variable.key, test: filter, node: self)
    }
}

extension PredicateExpressions.CollectionContainsCollection: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        guard Base.Output.self == String.self || Base.Output.self == Substring.self else {
            throw translator.unsupported(self, "searches for a run of elements; only strings translate (CONTAINS)")
        }
        return try translator.stringComparison(base, .contains, other, node: self) { $0.contains($1) }
    }
}

extension PredicateExpressions.SequenceStartsWith: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        guard Base.Output.self == String.self || Base.Output.self == Substring.self else {
            throw translator.unsupported(self, "tests a collection's prefix; only strings translate (BEGINSWITH)")
        }
        return try translator.stringComparison(base, .beginsWith, prefix, node: self) { $0.hasPrefix($1) }
    }
}

extension PredicateExpressions.SequenceMinimum: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.aggregate(elements, .min, node: self)
    }
}

extension PredicateExpressions.SequenceMaximum: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.aggregate(elements, .max, node: self)
    }
}

extension PredicateExpressions.ClosedRange: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .range(lower: try translator.term(lower), upper: try translator.term(upper), closed: true)
    }
}

extension PredicateExpressions.Range: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        .range(lower: try translator.term(lower), upper: try translator.term(upper), closed: false)
    }
}

extension PredicateExpressions.RangeExpressionContains: QueryTranslatable {
    func translate(_ translator: PredicateTranslator) throws(RealmError) -> PredicateTerm {
        try translator.rangeContains(range, element: element, node: self) { op in
            comparisonFold(Element.Output.self, op)
        }
    }
}
