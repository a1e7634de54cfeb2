"""Where users already work: Lightning (:mod:`.lightning`), torchdata's ``StatefulDataLoader``
(:mod:`.torchdata`) and mmaction2 pipelines (:mod:`.mmaction`). Each module imports its
library when it is used; none is imported here, so ``import hyperframes`` needs none of them.
(MLflow is a training logger: ``train.loggers: [tensorboard, mlflow]``.)"""

__all__: list[str] = []
