/// SpinExamples: see DESIGN.md §1 for what this module owns.
package enum SpinExamplesModule {}
