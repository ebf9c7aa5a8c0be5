"""The pipeline's predictions, read back: where each prediction file is and what it scored (:mod:`.files`), its
answers in one shape for every protocol (:mod:`.records`), the scored rows (:mod:`.rows`), and both together as a
pandas frame with a control joined to its base (:mod:`.frame`)."""

from evaluators.predictions.files import PredictionFile, find_predictions
from evaluators.predictions.frame import COLUMNS, collect, join_controls, load_predictions
from evaluators.predictions.records import Answer, Dataset, read_answers
from evaluators.predictions.rows import dataset_rows

__all__ = ["COLUMNS", "Answer", "Dataset", "PredictionFile", "collect", "dataset_rows", "find_predictions",
           "join_controls", "load_predictions", "read_answers"]
