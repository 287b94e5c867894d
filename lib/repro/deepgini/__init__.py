"""DeepGini chapter: classifiers, attacks, coverage criteria, surprise adequacy, prioritizers, experiment."""
