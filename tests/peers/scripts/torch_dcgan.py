"""pytorch/examples dcgan/main.py, with ``torch`` renamed ``minigrad``.

The Generator/Discriminator are the example's (ConvTranspose2d/BatchNorm2d/ReLU/Tanh and
Conv2d/LeakyReLU/Sigmoid, weights_init, BCELoss, two Adams with beta1=0.5) scaled to 16x16 images;
synthetic blobs (NumPy, fixed seed, in [-1, 1]) stand in for the image folder. ``main()``
returns the per-step losses of D and G and D(x), D(G(z)).
"""

import argparse

import numpy as np

import minigrad
import minigrad.nn as nn
import minigrad.optim as optim
import minigrad.utils.data


class Generator(nn.Module):
    def __init__(self, ngpu, nz, ngf, nc):
        super(Generator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. (ngf*4) x 4 x 4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. (ngf*2) x 8 x 8
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh()
            # state size. (nc) x 16 x 16
        )

    def forward(self, input):
        output = self.main(input)
        return output


class Discriminator(nn.Module):
    def __init__(self, ngpu, ndf, nc):
        super(Discriminator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is (nc) x 16 x 16
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 8 x 8
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 4 x 4
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


# custom weights initialization called on netG and netD
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        minigrad.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        minigrad.nn.init.normal_(m.weight, 1.0, 0.02)
        minigrad.nn.init.zeros_(m.bias)


def synthetic_images(n, nc, size, seed):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / (size - 1)
    cy, cx = rng.random((2, n, 1, 1))
    blob = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 0.05)
    images = np.repeat(blob[:, None], nc, axis=1) * 2 - 1
    return minigrad.tensor(images.astype(np.float32)), minigrad.zeros(n, dtype=minigrad.int64)


def main(argv=()):
    parser = argparse.ArgumentParser()
    parser.add_argument('--workers', type=int, help='number of data loading workers', default=0)
    parser.add_argument('--batchSize', type=int, default=8, help='input batch size')
    parser.add_argument('--imageSize', type=int, default=16)
    parser.add_argument('--nz', type=int, default=8, help='size of the latent z vector')
    parser.add_argument('--ngf', type=int, default=8)
    parser.add_argument('--ndf', type=int, default=8)
    parser.add_argument('--niter', type=int, default=2, help='number of epochs to train for')
    parser.add_argument('--lr', type=float, default=0.0002, help='learning rate, default=0.0002')
    parser.add_argument('--beta1', type=float, default=0.5, help='beta1 for adam. default=0.5')
    parser.add_argument('--ngpu', type=int, default=1, help='number of GPUs to use')
    parser.add_argument('--manualSeed', type=int, default=999, help='manual seed')
    opt = parser.parse_args(list(argv))

    minigrad.manual_seed(opt.manualSeed)
    device = minigrad.device("cuda:0" if minigrad.cuda.is_available() else "cpu")

    nc = 3
    dataset = minigrad.utils.data.TensorDataset(*synthetic_images(32, nc, opt.imageSize, 0))
    dataloader = minigrad.utils.data.DataLoader(dataset, batch_size=opt.batchSize,
                                                shuffle=True, num_workers=int(opt.workers))

    ngpu = int(opt.ngpu)
    nz = int(opt.nz)
    ngf = int(opt.ngf)
    ndf = int(opt.ndf)

    netG = Generator(ngpu, nz, ngf, nc).to(device)
    netG.apply(weights_init)
    print(netG)

    netD = Discriminator(ngpu, ndf, nc).to(device)
    netD.apply(weights_init)
    print(netD)

    criterion = nn.BCELoss()

    fixed_noise = minigrad.randn(opt.batchSize, nz, 1, 1, device=device)
    real_label = 1
    fake_label = 0

    # setup optimizer
    optimizerD = optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))

    history = {"loss_D": [], "loss_G": [], "D_x": [], "D_G_z1": []}
    for epoch in range(opt.niter):
        for i, data in enumerate(dataloader, 0):
            ############################
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            ###########################
            # train with real
            netD.zero_grad()
            real_cpu = data[0].to(device)
            batch_size = real_cpu.size(0)
            label = minigrad.full((batch_size,), real_label,
                                  dtype=real_cpu.dtype, device=device)

            output = netD(real_cpu)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            # train with fake
            noise = minigrad.randn(batch_size, nz, 1, 1, device=device)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()

            ############################
            # (2) Update G network: maximize log(D(G(z)))
            ###########################
            netG.zero_grad()
            label.fill_(real_label)  # fake labels are real for generator cost
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()

            print('[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f'
                  % (epoch, opt.niter, i, len(dataloader),
                     errD.item(), errG.item(), D_x, D_G_z1, D_G_z2))
            history["loss_D"].append(errD.item())
            history["loss_G"].append(errG.item())
            history["D_x"].append(D_x)
            history["D_G_z1"].append(D_G_z1)

        fake = netG(fixed_noise)
        history["fake_shape"] = tuple(fake.shape)
    history["losses"] = history["loss_D"]
    return history


if __name__ == '__main__':
    main()
