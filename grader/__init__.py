"""micrograde's grader package: the grading core (`grader.grading`) and the Flask site."""
