"""PyTorch's "Language Modeling with nn.Transformer" tutorial (nn.TransformerEncoder), with
``torch`` renamed ``minigrad``.

A synthetic token stream (NumPy, fixed seed) stands in for torchtext's WikiText2. The model is
the tutorial's TransformerModel (Embedding * sqrt(d_model), PositionalEncoding buffer,
TransformerEncoderLayer/TransformerEncoder, causal mask from
``nn.Transformer.generate_square_subsequent_mask``, Linear decoder), trained with
CrossEntropyLoss, SGD(lr=5.0), clip_grad_norm_(0.5) and StepLR(1.0, gamma=0.95), at tiny sizes.
``main()`` returns the per-step losses and each epoch's validation loss.
"""

import math
import time

import numpy as np

import minigrad
from minigrad import nn, Tensor
from minigrad.nn import TransformerEncoder, TransformerEncoderLayer


class TransformerModel(nn.Module):

    def __init__(self, ntoken: int, d_model: int, nhead: int, d_hid: int,
                 nlayers: int, dropout: float = 0.5):
        super().__init__()
        self.model_type = 'Transformer'
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = TransformerEncoder(encoder_layers, nlayers)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)

        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src: Tensor, src_mask: Tensor = None) -> Tensor:
        """
        Arguments:
            src: Tensor, shape ``[seq_len, batch_size]``
            src_mask: Tensor, shape ``[seq_len, seq_len]``

        Returns:
            output Tensor of shape ``[seq_len, batch_size, ntoken]``
        """
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        output = self.transformer_encoder(src, src_mask)
        output = self.linear(output)
        return output


class PositionalEncoding(nn.Module):

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)

        position = minigrad.arange(max_len).unsqueeze(1)
        div_term = minigrad.exp(minigrad.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = minigrad.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = minigrad.sin(position * div_term)
        pe[:, 0, 1::2] = minigrad.cos(position * div_term)
        self.register_buffer('pe', pe)

    def forward(self, x: Tensor) -> Tensor:
        """
        Arguments:
            x: Tensor, shape ``[seq_len, batch_size, embedding_dim]``
        """
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)


def data_process(length, ntokens, seed) -> Tensor:
    """A noisy cyclic token stream in place of the tokenized WikiText2 lines."""
    rng = np.random.default_rng(seed)
    ids = (np.arange(length) * 3) % ntokens
    flip = rng.random(length) < 0.1
    ids[flip] = rng.integers(0, ntokens, size=int(flip.sum()))
    return minigrad.tensor(ids, dtype=minigrad.long)


device = minigrad.device('cuda' if minigrad.cuda.is_available() else 'cpu')


def batchify(data: Tensor, bsz: int) -> Tensor:
    """Divides the data into ``bsz`` separate sequences, removing extra elements
    that wouldn't cleanly fit.

    Arguments:
        data: Tensor, shape ``[N]``
        bsz: int, batch size

    Returns:
        Tensor of shape ``[N // bsz, bsz]``
    """
    seq_len = data.size(0) // bsz
    data = data[:seq_len * bsz]
    data = data.view(bsz, seq_len).t().contiguous()
    return data.to(device)


bptt = 8


def get_batch(source: Tensor, i: int):
    """
    Args:
        source: Tensor, shape ``[full_seq_len, batch_size]``
        i: int

    Returns:
        tuple (data, target), where data has shape ``[seq_len, batch_size]`` and
        target has shape ``[seq_len * batch_size]``
    """
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i+seq_len]
    target = source[i+1:i+1+seq_len].reshape(-1)
    return data, target


def main():
    minigrad.manual_seed(0)
    ntokens = 16  # size of vocabulary
    batch_size = 4
    eval_batch_size = 4
    # shape ``[seq_len, batch_size]``
    train_data = batchify(data_process(256, ntokens, seed=0), batch_size)
    val_data = batchify(data_process(96, ntokens, seed=1), eval_batch_size)

    emsize = 16  # embedding dimension
    d_hid = 32  # dimension of the feedforward network model in ``nn.TransformerEncoder``
    nlayers = 2  # number of ``nn.TransformerEncoderLayer`` in ``nn.TransformerEncoder``
    nhead = 2  # number of heads in ``nn.MultiheadAttention``
    dropout = 0.2  # dropout probability
    model = TransformerModel(ntokens, emsize, nhead, d_hid, nlayers, dropout).to(device)

    criterion = nn.CrossEntropyLoss()
    lr = 5.0  # learning rate
    optimizer = minigrad.optim.SGD(model.parameters(), lr=lr)
    scheduler = minigrad.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)

    losses = []

    def train(model: nn.Module) -> None:
        model.train()  # turn on train mode
        total_loss = 0.
        log_interval = 4
        start_time = time.time()

        num_batches = len(train_data) // bptt
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i)
            output = model(data)
            output_flat = output.view(-1, ntokens)
            loss = criterion(output_flat, targets)

            optimizer.zero_grad()
            loss.backward()
            minigrad.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()

            total_loss += loss.item()
            losses.append(loss.item())
            if batch % log_interval == 0 and batch > 0:
                lr = scheduler.get_last_lr()[0]
                ms_per_batch = (time.time() - start_time) * 1000 / log_interval
                cur_loss = total_loss / log_interval
                ppl = math.exp(cur_loss)
                print(f'| epoch {epoch:3d} | {batch:5d}/{num_batches:5d} batches | '
                      f'lr {lr:02.2f} | ms/batch {ms_per_batch:5.2f} | '
                      f'loss {cur_loss:5.2f} | ppl {ppl:8.2f}')
                total_loss = 0
                start_time = time.time()

    def evaluate(model: nn.Module, eval_data: Tensor) -> float:
        model.eval()  # turn on evaluation mode
        total_loss = 0.
        with minigrad.no_grad():
            for i in range(0, eval_data.size(0) - 1, bptt):
                data, targets = get_batch(eval_data, i)
                seq_len = data.size(0)
                output = model(data)
                output_flat = output.view(-1, ntokens)
                total_loss += seq_len * criterion(output_flat, targets).item()
        return total_loss / (len(eval_data) - 1)

    best_val_loss = float('inf')
    epochs = 2
    val_losses = []

    for epoch in range(1, epochs + 1):
        epoch_start_time = time.time()
        train(model)
        val_loss = evaluate(model, val_data)
        val_losses.append(val_loss)
        val_ppl = math.exp(val_loss)
        elapsed = time.time() - epoch_start_time
        print('-' * 89)
        print(f'| end of epoch {epoch:3d} | time: {elapsed:5.2f}s | '
              f'valid loss {val_loss:5.2f} | valid ppl {val_ppl:8.2f}')
        print('-' * 89)

        if val_loss < best_val_loss:
            best_val_loss = val_loss

        scheduler.step()
    return {"losses": losses, "val_losses": val_losses}


if __name__ == '__main__':
    main()
